-- A new user's first prompt finds no model; they configure one (the env file) and run :OllieRestart: a fresh daemon
-- reads it, the chat comes back with its session, and the next prompt is answered.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results
local client = require("ollie.client")

vim.cmd("Ollie hello")
H.wait_chat("_%(error%)_", 30000)
local c = H.current()
R.session_before = c.session
R.first_daemon = client.client_id
R.chat_before = H.chat.text()

local dir = vim.env.XDG_CONFIG_HOME .. "/ollie"
vim.fn.mkdir(dir, "p")
vim.fn.writefile(vim.split(os.getenv("OLLIE_TEST_ENV_TEXT"), "\n"), dir .. "/env")

vim.cmd("OllieRestart")
H.wait(function()
  for _, n in ipairs(R.notifications) do
    if n.msg:find("the daemon restarted", 1, true) then
      return true
    end
  end
  return false
end, "the restart")
R.second_daemon = client.client_id
R.first_stopped = vim.lsp.get_client_by_id(R.first_daemon) == nil
  or vim.lsp.get_client_by_id(R.first_daemon):is_stopped()
-- The chat shows its session again (its first prompt, read from the new daemon).
H.wait_chat("hello", 15000)
R.session_after = c.session

vim.cmd("Ollie hello again")
H.wait_chat("Hi from the configured model.*_%(end%)_", 30000)
H.finish()
