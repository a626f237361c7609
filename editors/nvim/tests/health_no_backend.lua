-- :checkhealth ollie with no reachable backend: first before the daemon runs (a short-lived daemon
-- answers), then with it running (ollie/state). Both report the error and its fix.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H

local function report()
  vim.cmd("checkhealth ollie")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("bwipeout!")
  return table.concat(lines, "\n")
end

H.results.before_start = report()
H.results.running_before = require("ollie.client").get() ~= nil
-- `ollie doctor` answered: no daemon ran, so no session was made.
H.results.sessions_before_start = #vim.fn.glob(vim.env.XDG_DATA_HOME .. "/ollie/sessions/*", false, true)
-- A daemon command with no `ollie doctor` beside it: a short-lived daemon answers instead.
local config = require("ollie.config")
local cmd = config.options.cmd
config.options.cmd = { cmd[1], "-c", "import runpy; runpy.run_module('ollie_lsp', run_name='__main__')" }
H.results.short_lived = report()
config.options.cmd = cmd
U.call("ollie/state", {})
H.results.while_running = report()
H.finish()
