-- :'<,'>Ollie sends the selected lines as context.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd.edit("code.py")
-- Unsaved text: the daemon must see the buffer, not the file on disk.
vim.api.nvim_buf_set_lines(0, 1, 2, false, { "    return a * b  # unsaved edit" })
vim.cmd("2,3Ollie explain this")
H.wait_chat("_%(end%)_")
H.finish()
