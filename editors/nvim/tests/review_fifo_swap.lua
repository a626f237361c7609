-- A later change made b.txt differ from what turn 1 left; as its diff opens, right after the plugin's open check, a
-- step swaps b.txt for a FIFO (spare/b.txt, made by the test). Whether the file is still as the turn left it was read
-- with readfile by name: on a FIFO that waited for a writer for good, Neovim frozen. The diff shows the text turn 1
-- left instead.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local review = require("ollie.review")
local requests = require("ollie.requests")

require("ollie").ask("shout beta")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
chat:close()
vim.fn.writefile({ "alpha", "BETA", "mine" }, "b.txt") -- edited since the turn: the diff reads the file

vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
local check = requests.unopenable
requests.unopenable = function(path)
  local why = check(path)
  if not why and path:match("/b%.txt$") then
    assert(vim.uv.fs_rename("spare/b.txt", "b.txt")) -- the step's swap, just after the check
  end
  return why
end
review.open_diff("b.txt")
H.results.after = vim.api.nvim_buf_get_name(0)
H.results.after_lines = vim.api.nvim_buf_get_lines(vim.fn.bufnr("ollie://turn-1/after/b.txt"), 0, -1, false)
H.finish()
