-- A step writes files named with a newline, terminal escapes and a byte that is no UTF-8: the turn ends in the chat
-- (its end event was dropped whole, its JSON refused), its changes line counts them, and the changes list draws each
-- name as text on its own line (a newline in one failed the whole list).
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H

require("ollie").ask("write odd names")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
H.results.chat = chat.transcript:text()
chat:close()

vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
H.results.list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
H.finish()
