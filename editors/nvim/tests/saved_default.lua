-- Queued prompts kept across a quit, for the daemon's default session resumed at start (OLLIE_TEST_RESUME: the
-- daemon is told to resume it, as initializationOptions.session does). The first run queues a prompt while a turn
-- streams and quits mid-turn; the second opens a fresh chat, whose default session is that one: the prompt is
-- queued again, held. Before, only a session switched to (:OllieSessions) got its prompts back.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local client = require("ollie.client")
local resume = os.getenv("OLLIE_TEST_RESUME")

if not resume then
  vim.cmd("Ollie tell me a long story")
  H.wait_chat("Once upon")
  local queued = false
  H.current():queue("and the queued one", {}, function() queued = true end) -- as Enter while the turn streams
  H.wait(function() return queued end, "the daemon to have the queued prompt")
  H.results.session = H.current().session
  H.finish() -- quits mid-turn: the daemon, and the queue it held, end with the editor
  return
end

local requests = require("ollie.requests")
local flags = requests.init_options
requests.init_options = function(init) return vim.tbl_extend("force", flags(init), { session = resume }) end
vim.cmd("OllieChat")
H.wait_chat("from before the editor quit")
H.results.session = H.current().session
H.results.held = H.current().queue_held
H.results.split = H.split_words({ "<C-s>", "/queued" })
local state
client.request("ollie/state", { session = resume }, function(_, res) state = res end)
H.wait(function() return state ~= nil end, "the session's state")
H.results.queued, H.results.running = state.queuedPrompts, state.running
H.finish()
