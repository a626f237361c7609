-- :OllieAgent as a user picks in it: the current agent picked again changes nothing; another one starts a new
-- conversation, and the chat then shows it, not the old one the model no longer has; the old one is kept as a saved
-- session, which :OllieSessions brings back.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

---vim.ui.select answers `pick`, once; the prompt it showed is kept.
local function pick(name)
  vim.ui.select = function(items, opts, on_choice)
    R.prompt = opts.prompt
    R.items = items
    on_choice(name)
  end
end

vim.cmd("Ollie what does mul do?")
H.wait_chat("It adds%.")
H.wait_chat("_%(end%)_")
-- The title comes with the session's state, apart from the turn's events: the statusline is read once it has it.
H.wait(function() return H.ollie.statusline():find(" · what does mul", 1, true) ~= nil end, "the session's title")
pick("default") -- the current one
vim.cmd("OllieAgent")
H.wait(function() return R.items ~= nil end, "the agent picker")
H.settle()
R.after_current = H.chat.text()
R.statusline_before = H.ollie.statusline()

R.items = nil
pick("plan")
vim.cmd("OllieAgent")
H.wait(function()
  local text = H.chat.text()
  return text:find("agent: plan (session cleared", 1, true) ~= nil and not text:find("It adds.", 1, true)
end, "the chat drawn anew after the switch", 15000)
-- The cleared session has no title (its first prompt's words named a conversation no longer there).
H.wait(function() return H.current().title == "" end, "the cleared session's title gone", 10000)
H.settle()
R.after_other = H.chat.text()
R.statusline_after = H.ollie.statusline()

-- The conversation before, picked in :OllieSessions by the id the chat gave: the chat shows it again.
local kept = R.after_other:match('saved as "[^"]*" %((%S+)%)')
local c = H.current()
local seen = {}
H.pick_id(kept, seen)
vim.cmd("OllieSessions")
H.wait(function() return kept ~= nil and c.session == kept end, "the chat on the kept conversation")
H.wait_chat("It adds%.")
R.kept_chat = H.chat.text()
R.picker = seen.labels
-- Its title renamed as a teammate may name a shared session: a line break and a U+202E in it.
require("ollie.requests").call("ollie/session/rename", { session = c.session, title = "mul\n\226\128\174sdda" },
  function() end)
H.wait(function() return c.title:find("sdda", 1, true) ~= nil end, "the renamed title")
R.statusline_hostile = H.ollie.statusline()
H.finish()
