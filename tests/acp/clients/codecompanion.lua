-- codecompanion.nvim against `ollie acp`, configured as README.md says; writes what its mode picker offers.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "harness.lua"))
local result, wait = H.result, H.wait

H.run(function()
  local command = vim.json.decode(assert(os.getenv("OLLIE_ACP_COMMAND")))
  require("codecompanion").setup({ adapters = { acp = {
    ollie = function()
      return require("codecompanion.adapters").extend("gemini_cli", {
        name = "ollie", commands = { default = command }, defaults = { auth_method = "none" },
      })
    end,
  } } })

  -- Every picker codecompanion opens goes through vim.ui.select: record it, and pick what the test asks.
  local picks = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(picks, { prompt = opts.prompt, items = items })
    local want = #picks == 1 and "Approval mode" or "Read-only"
    for i, item in ipairs(items) do
      if item:find(want, 1, true) then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end

  vim.cmd("CodeCompanionChat adapter=ollie")
  local chat = require("codecompanion").last_chat()
  wait("the ACP session", function()
    return chat.acp_connection ~= nil and chat.acp_connection.session_id ~= nil
  end)
  local options = chat.acp_connection:get_config_options()
  result.options = vim.tbl_map(function(o)
    return { id = o.id, category = o.category, current = o.currentValue,
             values = vim.tbl_map(function(v) return v.value end, o.options or {}) }
  end, options)

  -- The mode picker: /acp_session_options, as a user runs it in the chat.
  local SlashCommand = require("codecompanion.interactions.chat.slash_commands.builtin.acp_session_options")
  SlashCommand.new({ Chat = chat, config = {}, context = {} }):execute()
  result.picks = picks
  H.wait_mode_change(function() return chat.acp_connection:get_config_options() end)

  -- A prompt sent as the chat's submit sends it (its buffer's parse needs a markdown parser this Neovim lacks): the
  -- chat takes the title ollie gives the session (`session_info_update`).
  local answered = false
  chat.acp_connection:session_prompt({ { role = "user", content = "what does hello.py print", _meta = {} } })
    :on_message_chunk(function() end):on_complete(function() answered = true end)
    :on_error(function(e) error("the prompt failed: " .. tostring(e)) end):send()
  wait("the answer", function() return answered end)
  wait("the chat's title", function() return chat.title ~= nil end)
  result.title = chat.title

  -- A prompt ollie refuses (-32602): codecompanion shows `error.data.error`, else the message.
  chat.acp_connection:session_prompt({ { role = "user", content = " ", _meta = {} } })
    :on_message_chunk(function() end):on_complete(function() end)
    :on_error(function(e) result.refusal = tostring(e) end):send()
  wait("the refusal", function() return result.refusal ~= nil end)
end)
