-- A turn edits a.txt in two places; its diff is open (a.txt's buffer loaded, unmodified). Another session's step then
-- swaps the session's cwd (the workspace) for a link to `outside` (done here, as that step would), and the user
-- undoes the second hunk: the undo goes to the buffer, which the editor saves by name.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local notified = U.notified

require("ollie").setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")) })
local review = require("ollie.review")
require("ollie").ask("shout lines 2 and 18")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
chat:close()
vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
review.open_diff("a.txt")
U.wait(function() return vim.wo.diff and vim.api.nvim_buf_line_count(0) >= 18 end, "the diff")
local ws, outside = vim.uv.cwd(), os.getenv("OLLIE_TEST_OUTSIDE")
assert(vim.uv.fs_rename(ws, ws .. ".old"))
assert(vim.uv.fs_symlink(outside, ws))
vim.api.nvim_win_set_cursor(0, { 18, 0 })
vim.cmd.normal("du")
U.wait(function() return notified("undo") end, "the undo's answer")
H.results.told = vim.tbl_map(function(n) return n.msg end, H.results.notifications)
H.results.buffer = vim.api.nvim_buf_get_lines(0, 0, -1, false)
H.results.outside = vim.fn.readdir(outside)
H.results.old = vim.fn.readfile(ws .. ".old/a.txt")
H.finish()
