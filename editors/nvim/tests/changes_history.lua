-- A session whose two turns changed files, resumed in a new chat (:OllieNew, then :OllieSessions): the chat drawn
-- from its history shows each turn's "✎ N files changed" line where the live turn drew it, and <CR> on the first
-- opens that turn's changes, as the live line does.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd("Ollie shout the notes and the code")
H.wait_chat("_%(end%)_")
vim.cmd("Ollie now multiply")
H.wait_chat("_%(end%)_.*multiplied.*_%(end%)_")
R.live_chat = H.chat.text()

local first = H.current().session
vim.cmd("OllieNew")
H.wait(function() return H.current().session ~= first end, "the new session")
H.wait(function() return not H.chat.text():find("shouted") end, "an empty chat")
H.pick_id(first)
vim.cmd("OllieSessions")
H.wait_chat("multiplied.*_%(end%)_")
R.resumed_chat = H.chat.text()

---<CR> on the transcript's line `line`: the changes list it opens (its lines), closed again.
local function open(line)
  local row = H.expect(H.row_of(line), line .. " in the resumed chat")
  local tw = H.current():windows()
  vim.api.nvim_set_current_win(tw)
  vim.api.nvim_win_set_cursor(tw, { row + 1, 0 })
  vim.cmd.normal(vim.keycode("<CR>"))
  H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list of " .. line)
  H.wait(function() return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]:find("^ollie: turn") ~= nil end,
    "the list's turn")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd.close()
  return lines
end
R.first_list = open("✎ 2 files changed — :OllieChanges")
R.second_list = open("✎ 1 file changed — :OllieChanges")

-- A turn's end held while the chat is drawn again: the history holds that turn, its changes line too; the files its
-- live steps noted draw no second one.
local c = H.current()
c.turn_files = { ["c.txt"] = true }
c:redraw()
c:on_event({ session = c.session, role = "turn", content = "end" })
H.wait(function() return c.redrawing == nil end, "the chat drawn again")
R.held_end_chat = H.chat.text()

-- A last turn that only talks: :OllieChanges shows the last turn that changed files, and says so.
vim.cmd("Ollie just talk")
H.wait_chat("talked.*_%(end%)_")
-- What it asks the daemon (ollie/changes, each a diff): once, not a turn at a time back.
local requests = require("ollie.requests")
local call, asked = requests.call, {}
requests.call = function(method, params, ...)
  if method == "ollie/changes" then asked[#asked + 1] = params end
  return call(method, params, ...)
end
vim.cmd("OllieChanges")
H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
R.talk_asked = asked
R.talk_list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
R.talk_told = vim.tbl_map(function(n) return n.msg end, vim.tbl_filter(function(n)
  return n.msg:find("no changes", 1, true) ~= nil end, R.notifications))

-- :OllieRewind's picker names the files of the turns that changed some, asked for those alone (it asked the talk's).
vim.cmd.close()
asked = {}
local seen = {}
H.pick_id(nil, seen)
vim.cmd("OllieRewind")
H.wait(function() return seen.labels ~= nil end, "the rewind picker")
requests.call = call
R.rewind_labels = seen.labels
R.rewind_asked = vim.tbl_map(function(p) return p.turn or "last" end, asked)
H.finish()
