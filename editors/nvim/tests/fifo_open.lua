-- A step makes a FIFO and an added link to it: the changes list shows the link, and opening its diff (or the
-- step's location, from the transcript, or <C-w>f on its line) must not read the FIFO (Neovim then waited for its
-- writer for good). Nor the diff of an added link to the user's key, outside the workspace.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local notified = U.notified

require("ollie").ask("make a pipe")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")

-- The first step's location in the transcript (pipe.md, written), opened as <CR> does.
local row
for r = 0, vim.api.nvim_buf_line_count(chat.transcript.buf) - 1 do
  local loc = chat.transcript:target_at(r)
  if loc and loc.path == "pipe.md" then
    row = r
  end
end
H.results.location_found = row ~= nil
if row then
  local transcript_win = chat:windows()
  vim.api.nvim_set_current_win(transcript_win)
  vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
  chat:open_location()
end
-- The answer names key.md, an added link to the user's key: gf on it read the key into a buffer of key.md (shown, and
-- the daemon's text of that file).
for r = 0, vim.api.nvim_buf_line_count(chat.transcript.buf) - 1 do
  local col = vim.api.nvim_buf_get_lines(chat.transcript.buf, r, r + 1, false)[1]:find("key.md", 1, true)
  if col and not chat.transcript:target_at(r) then
    vim.api.nvim_set_current_win((chat:windows()))
    vim.api.nvim_win_set_cursor(0, { r + 1, col - 1 })
    chat:open_location(false)
    H.results.key_named = true
    break
  end
end
H.results.key_gf_refused = vim.fn.execute("messages"):find("key.md is a link leading out of ", 1, true) ~= nil
chat:close()

vim.cmd("OllieChanges")
U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
H.results.list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
require("ollie.review").open_diff("link.md")
H.results.refused = notified("link.md is not a regular file: no diff") ~= nil
-- Neovim's own <C-w>f on the link's line opened it: the FIFO read, the editor held for good.
vim.fn.search("link.md", "w")
vim.api.nvim_feedkeys(vim.keycode("<C-w>f"), "mx", false)
H.results.split_refused = vim.fn.execute("messages"):find("link.md is not a regular file: not opened", 1, true) ~= nil
-- An added link to the user's key: its diff read the key into a buffer of key.md, the file's text to the daemon.
require("ollie.review").open_diff("key.md")
H.results.key_refused = notified("key.md is a link leading out of ") ~= nil
H.results.key_read = false
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  H.results.key_read = H.results.key_read or table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find(
    "PRIVATE KEY", 1, true) ~= nil
end
H.results.tabs = vim.fn.tabpagenr("$")
H.finish()
