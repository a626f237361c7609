-- A session whose turn ran while this editor had none of its events (as a client that joined it mid-session): the
-- chat shows it from the history (`ollie/context`), the user sees the turn ended, and a prompt queued now waits for
-- the next turn's end. Before, `seen` counted only the events received (none): the prompt ran at once.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local client = require("ollie.client")

local lsp = assert(client.ensure())
local deliver = lsp.handlers["ollie/event"]
local cut_off = true
lsp.handlers["ollie/event"] = function(...)
  if not cut_off then
    return deliver(...)
  end
end

local session, answered
client.request("ollie/session/new", vim.empty_dict(), function(_, res)
  session = res.session
  client.request("ollie/submit", { session = session, text = "first" }, function(_, done) answered = done end)
end)
H.wait(function() return answered ~= nil end, "the first turn's answer", 60000)
cut_off = false
H.results.seen_before = client.seen(session)

require("ollie").load_session(session)
H.wait_chat("first answer")
H.results.seen_drawn = client.seen(session)
local queued = false
H.current():queue("for later", {}, function() queued = true end) -- as Enter while a turn runs queues it
H.wait(function() return queued end, "the daemon to have the queued prompt")
local state
client.request("ollie/state", { session = session }, function(_, res) state = res end)
H.wait(function() return state ~= nil end, "the session's state")
H.results.queued, H.results.running = state.queuedPrompts, state.running
H.finish()
