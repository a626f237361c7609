-- A step writes files named with a newline, terminal escapes and a byte that is no UTF-8: the turn ends in the chat
-- (its end event was dropped whole, its JSON refused), its changes line counts them, and the changes list draws each
-- name as text on its own line (a newline in one failed the whole list).
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H

U.changes_after("write odd names")
H.finish()
