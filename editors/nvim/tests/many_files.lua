-- A step writes 105 files, more than ollie/changes lists (its first 100): the changes list counts them all and says
-- how many it left out, and a listed file's diff still opens. The chat says under the step how many files it changed.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H

U.changes_after("write many files")
require("ollie.review").open_diff("f001.txt")
H.results.diff = vim.api.nvim_buf_get_lines(0, 0, -1, false)
H.finish()
