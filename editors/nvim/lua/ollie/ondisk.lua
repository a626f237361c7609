-- What each file buffer's file was on disk (mtime, size, inode) when the editor last read or wrote it, so that the
-- agent's save (ollie/saveDocuments) never writes over a change made on disk since by something else (the user's
-- `git checkout` in a terminal, a formatter, another editor). Vim's own `:w` asks then (W13); the agent's save must
-- not stop the editor at a question, so it refuses instead. A stat reads no content (the workspace is hostile data).

local M = {}

---Buffer -> its file's stamp when last read or written ("absent": no file then).
---@type table<integer, string>
local seen = {}

---@param buf integer
---@return string
local function stamp(buf)
  local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(buf))
  return st and table.concat({ st.mtime.sec, st.mtime.nsec, st.size, st.ino }, ":") or "absent"
end

---Note buffer `buf`'s file as the editor now knows it (a file buffer only).
---@param buf integer
function M.remember(buf)
  if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
    seen[buf] = stamp(buf)
  end
end

---Whether `buf`'s file changed on disk since the editor last read or wrote it (false when it never noted it).
---@param buf integer
---@return boolean
function M.changed(buf)
  return seen[buf] ~= nil and seen[buf] ~= stamp(buf)
end

---Whether `buf`'s file already holds exactly what writing `buf` would put there: its change on disk, if any, is this
---same text (ollie's undo or rewind put the file back as it put the buffer back), so a write loses nothing. Reads
---only a regular file, opened without blocking (a FIFO swapped in never holds the editor), of the text's size.
---@param buf integer
---@return boolean
function M.holds(buf)
  local bo = vim.bo[buf]
  if bo.binary or bo.bomb or bo.fileformat ~= "unix" or not (bo.fileencoding == "" or bo.fileencoding == "utf-8") then
    return false -- what a write puts there is not simply the lines: say changed, as before
  end
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local empty = #lines == 1 and lines[1] == ""
  local text = empty and "" or (table.concat(lines, "\n") .. ((bo.eol or bo.fixeol) and "\n" or ""))
  local c = vim.uv.constants
  local fd = vim.uv.fs_open(vim.api.nvim_buf_get_name(buf), c.O_RDONLY + c.O_NONBLOCK, 0)
  if not fd then
    return false
  end
  local st = vim.uv.fs_fstat(fd)
  local same = st ~= nil and st.type == "file" and st.size == #text
    and (#text == 0 or vim.uv.fs_read(fd, #text, 0) == text)
  vim.uv.fs_close(fd)
  return same
end

local group = vim.api.nvim_create_augroup("ollie_ondisk", { clear = true })
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufWritePost", "FileChangedShellPost", "BufFilePost" }, {
  group = group,
  callback = function(a) M.remember(a.buf) end,
})
vim.api.nvim_create_autocmd("BufWipeout", { group = group, callback = function(a) seen[a.buf] = nil end })
-- Buffers read before the plugin loaded: as they are now (a change before this is not seen).
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(buf) then
    M.remember(buf)
  end
end

return M
