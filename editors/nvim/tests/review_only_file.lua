-- A turn changed one file: dU in the changes list asks first (that undoes all of the turn's changes, as a rewind
-- does); cancelled, nothing is undone; confirmed, the file goes back and the list says the turn's changes are undone.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local review = require("ollie.review")

require("ollie").ask("shout beta")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
chat:close()

vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
vim.api.nvim_win_set_cursor(0, { 2, 0 })

U.answer_select(function(item) return item == "Cancel" end)
vim.cmd.normal("dU")
H.results.cancelled = H.results.selects
-- Undone or not, the daemon says which: its list of the turn's changes (asked after the cancel was answered).
H.results.files_after_cancel = #U.call("ollie/changes", { turn = 1 }).files

U.answer_select(function(item) return item == "Undo all" end)
vim.cmd.normal("dU")
U.wait(function() return U.notified("undone: all changes to b.txt") end, "the file undo")
H.results.confirmed = H.results.selects
H.results.b_after_undo = vim.fn.readfile("b.txt")
H.results.list_after_undo = vim.api.nvim_buf_get_lines(review.current.list_buf, 0, -1, false)
H.finish()
