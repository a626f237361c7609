-- avante.nvim against `ollie acp`, configured as README.md says; writes what its mode picker (:AvanteACPModes) offers.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "harness.lua"))
local result, wait = H.result, H.wait

H.run(function()
  vim.cmd("runtime! plugin/avante.lua")
  local command = vim.json.decode(assert(os.getenv("OLLIE_ACP_COMMAND")))
  -- avante passes the agent PATH and `env` only: what ollie needs is listed there, as README says.
  local env = vim.json.decode(assert(os.getenv("OLLIE_ACP_ENV")))
  require("avante").setup({ provider = "ollie",
    acp_providers = { ollie = { command = command[1], args = { unpack(command, 2) }, env = env } } })

  result.notes = {} -- what avante tells the user, for a failure's message
  vim.notify = function(msg) table.insert(result.notes, tostring(msg)) end
  local picks = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(picks, { prompt = opts.prompt, items = items })
    for i, item in ipairs(items) do
      if item:find("Read-only", 1, true) then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end

  vim.cmd("AvanteChat")
  -- The sidebar connects to the agent as it opens; the user opens the picker once it is up (avante's picker
  -- started in the same instant may look before its own session is in: "No mode options available").
  wait("avante's ACP session", function()
    local sidebar = require("avante").get(false)
    return sidebar ~= nil and sidebar.acp_client ~= nil and sidebar.acp_client.config_options ~= nil
  end)
  local sidebar = require("avante").get(false)
  result.options = vim.tbl_map(function(o)
    return { id = o.id, category = o.category, current = o.currentValue,
             values = vim.tbl_map(function(v) return v.value end, o.options or {}) }
  end, sidebar.acp_client.config_options)
  vim.cmd("AvanteACPModes")
  wait("the mode picker", function() return #picks > 0 end)
  result.picks = picks
  H.wait_mode_change(function() return sidebar.acp_client.config_options end)
end)
