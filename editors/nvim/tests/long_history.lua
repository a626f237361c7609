-- A long saved session (more messages than one `ollie/context` answer holds) resumed with :OllieSessions: the
-- whole conversation is drawn, its first prompt to its last answer, read page by page, in a transcript highlighted
-- as a user's Neovim highlights it (filetype plugins on: treesitter's markdown).
vim.cmd("filetype plugin on")
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

local client = require("ollie.client")
local real_request = client.request
R.context_offsets = {}
client.request = function(method, params, cb)
  if method == "ollie/context" then
    table.insert(R.context_offsets, params.offset or vim.NIL)
  end
  return real_request(method, params, cb)
end

---This editor's CPU seconds so far (user and system).
local function cpu()
  local used = vim.uv.getrusage()
  return used.utime.sec + used.stime.sec + (used.utime.usec + used.stime.usec) / 1e6
end

H.pick_id(os.getenv("OLLIE_TEST_SESSION"))
local before = cpu()
vim.cmd("OllieSessions")
H.wait_chat("answer " .. os.getenv("OLLIE_TEST_LAST"), 90000) -- bounds a hang (30 s ran out under load)
R.draw_cpu_s = cpu() - before
R.highlighted = vim.treesitter.highlighter.active[H.current().transcript.buf] ~= nil
H.finish()
