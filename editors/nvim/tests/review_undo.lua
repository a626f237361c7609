-- A turn edits a.txt in two places: :OllieChanges lists it, `o` (configured) opens the diff, `zu` (configured)
-- on the second hunk undoes it (the first is kept), a stale undo is refused, and :OllieRewind puts the file back.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local notified = U.notified

-- The review keys come from setup({ keymaps = { review = ... } }): two changed, one unmapped (false), one bad
-- (told, and left at its default).
local told = #H.results.notifications
-- A tabline of the user's own stays theirs: ollie draws one only where Neovim's default would be.
vim.o.tabline = "%{'my tabs'}"
require("ollie").setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")),
  keymaps = { review = { open = "o", undo_hunk = "zu", refresh = false, close = 3 } } })
H.results.setup_told = vim.list_slice(H.results.notifications, told + 1)
H.results.own_tabline = vim.o.tabline
local keys = require("ollie.config").options.keymaps.review
local review = require("ollie.review")

-- Asked in the chat (as a user asks: the rewind picker then knows when the turn started), then the chat closed.
require("ollie").ask("shout lines 2 and 18")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
chat:close()

vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
H.results.list = vim.api.nvim_buf_get_lines(0, 0, -1, false)

vim.api.nvim_win_set_cursor(0, { 2, 0 })
H.results.list_maps = { o = vim.fn.maparg("o", "n", false, true).desc, R = vim.fn.maparg("R", "n"),
  cr = vim.fn.maparg("<CR>", "n") }
vim.cmd.normal("o")
H.results.tabs = vim.fn.tabpagenr("$")
H.results.diff_windows = #vim.tbl_filter(function(w) return vim.wo[w].diff end, vim.api.nvim_tabpage_list_wins(0))
H.results.before_name = vim.fn.bufname(vim.fn.winbufnr(1))
H.results.before_line2 = vim.fn.getbufline(vim.fn.winbufnr(1), 2)[1]
-- All the hints, in a window wide enough for them (a narrow one drops the last ones).
local diff_width = vim.api.nvim_win_get_width(0)
vim.api.nvim_win_set_width(0, 76)
H.results.winbar = vim.api.nvim_eval_statusline(vim.wo.winbar, { winid = 0, use_winbar = true }).str
vim.api.nvim_win_set_width(0, diff_width)
H.results.cursor = vim.api.nvim_win_get_cursor(0)
H.results.du_mapped = vim.fn.maparg("du", "n") ~= ""
-- Opened from Lua (a mapping of the user's own) instead of a key of the list, both sides start on the first hunk
-- too: 'cursorbind' follows a key's move, not one made from Lua (the "before" side stayed on line 1).
vim.cmd.tabclose()
review.open_diff("a.txt")
H.results.api_cursors = vim.tbl_map(function(w) return vim.api.nvim_win_get_cursor(w)[1] end,
  vim.api.nvim_tabpage_list_wins(0))

-- The diff tab has no chat of its own: it stands for the reviewed chat (`:Ollie` there made a new chat before).
local diff_win = vim.api.nvim_get_current_win()
local chats_before = vim.tbl_count(require("ollie.chat").chats)
H.results.diff_tab_chat = { current = require("ollie").current() == chat,
  session = require("ollie").current_session() == chat.session }
vim.cmd("OllieChat")
H.results.diff_tab_chat.opened_there = require("ollie").current() == chat
  and vim.api.nvim_get_current_tabpage() == chat.tab
H.results.diff_tab_chat.new_chats = vim.tbl_count(require("ollie.chat").chats) - chats_before
chat:close()
vim.api.nvim_set_current_win(diff_win)

-- Undo the hunk at line 18 of the file's window.
vim.api.nvim_win_set_cursor(0, { 18, 0 })
vim.cmd.normal("zu")
U.wait(function() return notified("undone: hunk 2 of a.txt") end, "the undo")
H.results.disk_after_undo = vim.fn.readfile("a.txt")
H.results.buffer_after_undo = vim.api.nvim_buf_get_lines(0, 0, -1, false)
H.results.hunks_left = #review.current.files[1].hunks
H.results.list_after_undo = vim.api.nvim_buf_get_lines(review.current.list_buf, 0, -1, false)

-- From the list, undo all of b.txt.
vim.api.nvim_set_current_win(vim.fn.win_findbuf(review.current.list_buf)[1])
vim.api.nvim_win_set_cursor(0, { 3, 0 })
vim.cmd.normal(keys.undo_file)
U.wait(function() return notified("undone: all changes to b.txt") end, "the file undo")
H.results.b_after_undo = vim.fn.readfile("b.txt")
H.results.list_after_file_undo = vim.api.nvim_buf_get_lines(review.current.list_buf, 0, -1, false)
vim.cmd.tabnext()
vim.cmd.wincmd("l")

-- The user edits the line of the remaining hunk; undoing it now is refused as stale, and nothing is written.
vim.api.nvim_buf_set_lines(0, 1, 2, false, { "LINE TWO, my own edit" })
vim.cmd("silent write")
vim.api.nvim_win_set_cursor(0, { 2, 0 })
vim.cmd.normal("zu")
U.wait(function() return notified("undo refused") end, "the stale refusal")
H.results.stale = notified("undo refused")
H.results.disk_after_stale = vim.fn.readfile("a.txt")

-- :OllieRewind: pick the turn, confirm; the files go back to before it.
U.answer_select(function(item, label)
  return label:find("turn 1", 1, true) ~= nil or type(item) == "string" and vim.startswith(item, "Rewind (")
end)
vim.cmd("OllieRewind")
U.wait(function() return notified("rewound to before turn 1") end, "the rewind")
H.results.rewind_selects = H.results.selects
H.results.disk_after_rewind = vim.fn.readfile("a.txt")
H.results.buffer_after_rewind = vim.api.nvim_buf_get_lines(vim.fn.bufnr("a.txt"), 0, -1, false)

-- :OllieRewind undo puts the files back as they were before the rewind.
U.answer_select(function(item) return item == "Undo rewind" end)
vim.cmd("OllieRewind undo")
U.wait(function() return notified("rewind undone") end, "the rewind undo")
H.results.disk_after_rewind_undo = vim.fn.readfile("a.txt")
H.finish()
