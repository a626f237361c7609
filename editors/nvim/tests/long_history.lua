-- A long saved session (more messages than one `ollie/context` answer holds) resumed with :OllieSessions: the
-- whole conversation is drawn, its first prompt to its last answer, read page by page.
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

H.pick_id(os.getenv("OLLIE_TEST_SESSION"))
vim.cmd("OllieSessions")
H.wait_chat("answer " .. os.getenv("OLLIE_TEST_LAST"), 30000)
H.finish()
