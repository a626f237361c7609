-- The chat and review together: a turn that changed files ends with "✎ 2 files changed", whose key opens the
-- changes list; :OllieRewind re-renders the chat; an approval question the turn no longer waits for (it was
-- stopped) closes its float and picker, and a late answer to it is harmless; named chats (:OllieChat name).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

-- Every request the plugin sends, by method: the turn's end draws its changes line without asking for them.
local client = require("ollie.client")
local sent, request = {}, client.request
client.request = function(method, ...)
  table.insert(sent, method)
  return request(method, ...)
end

vim.cmd.edit("code.py")
local code_win = vim.api.nvim_get_current_win()
vim.cmd("Ollie shout the notes and the code")
H.wait_chat("_%(end%)_")
local c = H.current()
local row = H.row_of("✎ 2 files changed — :OllieChanges")
R.changes_row = row
R.changes_groups = row and H.groups_at(row) or {}
R.sent_by_the_line = vim.deepcopy(sent)
R.first_chat = H.chat.text()

-- <CR> on the line (in the transcript) opens the turn's changes list.
H.wait(function() return c.transcript.changes[next(c.transcript.changes)].turn ~= nil end, "the line's turn")
local tw = c:windows()
vim.api.nvim_set_current_win(tw)
vim.api.nvim_win_set_cursor(tw, { row + 1, 0 })
vim.cmd.normal(vim.keycode("<CR>"))
H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
R.changes_list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.cmd.close()

-- A second turn, then :OllieRewind to before it: the chat shows what the conversation has left.
vim.cmd("Ollie and a second turn")
H.wait_chat("second answer")
H.wait_chat("_%(end%)_.*_%(end%)_")
vim.ui.select = function(items, _, on_choice)
  on_choice(vim.iter(items):find(function(item) return vim.startswith(item, "Rewind") end))
end
vim.cmd("OllieRewind 2")
H.wait(function() return not H.chat.text():find("second answer") end, "the chat to re-render after the rewind")
R.rewound_chat = H.chat.text()
-- `/rewind undo` typed in the chat puts the turn back, in the daemon and in the chat.
H.type_and_press("/rewind undo")
H.wait_chat("second answer")
H.wait_chat("› /rewind undo")
R.unrewound_chat = H.chat.text()

-- Asked before an edit; the picker (a float here, as telescope's or snacks') stays open; the turn is stopped.
vim.api.nvim_set_current_win(code_win)
vim.cmd("OllieApproval ask")
H.wait_notified("approval: ask", "the approval mode")
local late
vim.ui.select = function(items, opts, on_choice)
  R.asked = opts.prompt
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.tbl_map(function(i) return i.name end, items))
  vim.api.nvim_open_win(buf, true, { relative = "editor", row = 10, col = 10, width = 30, height = 4 })
  late = function() on_choice(items[1]) end
end
vim.cmd("Ollie make mul multiply")
H.wait(function() return late ~= nil end, "the approval question")
local function floats()
  return #vim.tbl_filter(function(w) return vim.api.nvim_win_get_config(w).relative ~= "" end,
    vim.api.nvim_list_wins())
end
R.floats_while_asked = floats()
vim.cmd("OllieStop")
H.wait_chat("_%(interrupted%)_")
R.floats_after_stop = floats()
R.waiting_after_stop = #require("ollie.permission").waiting
-- The user picks "Allow once" in the picker that was already closed: nothing happens.
late()
vim.cmd("Ollie still there?")
H.wait_chat("still here")
-- Read once a turn sent after the late answer has ended: an edit that answer let run would have landed by then.
R.code_after_late_answer = vim.fn.readfile("code.py")

-- Named chats: `:OllieChat notes` shows a chat of its own (its own session) in this tab's chat windows;
-- `:OllieChat tab1` goes back to the tab's first chat, kept by that name.
local first = H.current()
local wins = #vim.api.nvim_tabpage_list_wins(0)
vim.cmd("OllieChat notes")
local notes = H.current()
R.named = { name = notes.name, other = notes ~= first,
  input_focused = vim.api.nvim_get_current_buf() == notes.input_buf }
vim.cmd("Ollie in the notes chat")
H.wait_chat("notes answer")
R.named.session_differs = notes.session ~= nil and notes.session ~= first.session
R.named.chat = H.chat.text()
R.named.statusline = require("ollie").statusline()
vim.cmd("OllieChat tab1")
R.named.back = H.current() == first
R.named.back_chat = H.chat.text()
R.named.complete = vim.fn.getcompletion("OllieChat ", "cmdline")
R.named.windows_same = #vim.api.nvim_tabpage_list_wins(0) == wins
R.errors = vim.tbl_filter(function(n) return (n.level or 0) >= vim.log.levels.WARN end, R.notifications)
H.finish()
