-- The sessions picker lists every saved session, page after page by the daemon's cursor.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local pickers = require("ollie.pickers")

local picked = false
U.answer_select(function() return false end)
pickers.sessions(function() picked = true end)
U.wait(function() return picked end, "the sessions picker")
H.results.labels = H.results.selects[1].labels
H.finish()
