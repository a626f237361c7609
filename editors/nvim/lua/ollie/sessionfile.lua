-- Session files (`:mksession`, session plugins) saved with the chat open: they bring back empty stand-ins of the
-- chat's buffers. Their lines are made silent when written, and the stand-ins go once loaded (plugin/ollie.lua).
local M = {}

---Wipe the empty stand-ins of ollie's buffers, closing their windows: they showed as a second, dead chat, and
---ollie's own buffers could not take their names (the chat's were "[Scratch]"; `:OllieChanges` failed with E95).
---ollie's own buffers are all `nofile`; a stand-in is not.
function M.drop_stand_ins()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.startswith(vim.api.nvim_buf_get_name(buf), "ollie://") and vim.bo[buf].buftype == "" then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
end

---Make the session file's `file ollie://...` lines silent: each said "[Not edited]" as the session loaded, and with
---the file's own message they stopped `nvim -S` at a "Press ENTER" prompt.
---@param path string
function M.silence(path)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return
  end
  local ours = 0
  for i, line in ipairs(lines) do
    if line:match("^file ollie://") then
      lines[i], ours = "silent " .. line, ours + 1
    end
  end
  if ours > 0 then
    vim.fn.writefile(lines, path)
  end
end

return M
