-- Shared set-up for the headless Neovim scenarios run by tests/editors/test_nvim.py.
local H = {}

local plugin_dir = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)))
vim.opt.rtp:prepend(plugin_dir)
vim.cmd.runtime("plugin/ollie.lua")

H.results = { notifications = {} }
-- Keep what the plugin tells the user, for the assertions (and for debugging a failure).
vim.notify = function(msg, level)
  table.insert(H.results.notifications, { msg = msg, level = level })
end
H.ollie = require("ollie")
H.chat = require("ollie.chat")
H.ollie.setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")), chat = { position = "right" } })

---Wait until the chat buffer's text matches `pattern` (a Lua pattern); record a failure otherwise.
function H.wait_chat(pattern, timeout_ms)
  local ok = vim.wait(timeout_ms or 15000, function()
    return H.chat.text():find(pattern) ~= nil
  end, 20)
  if not ok then
    H.results.failure = string.format("timed out waiting for %q in chat:\n%s", pattern, H.chat.text())
    H.finish()
  end
  return ok
end

---Write the results as JSON for the pytest side, then quit.
function H.finish()
  H.results.chat = H.chat.text()
  local f = assert(io.open(os.getenv("OLLIE_TEST_OUT"), "w"))
  f:write(vim.json.encode(H.results))
  f:close()
  vim.cmd("qall!")
end

return H
