-- gf and gF on web and scp addresses the model's answer wrote, in the transcript: Neovim hands one to netrw (a
-- plugin every Neovim loads, as here), which fetched it with wget, curl or scp as the user, outside the sandbox and its
-- proxy.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
vim.cmd.runtime("plugin/netrwPlugin.vim") -- skipped under -u NONE; a user's Neovim has it

vim.cmd.edit("notes.txt")
H.ollie.ask("where are the docs?")
H.wait_chat("_%(end%)_")
local chat = H.current()
local win = vim.fn.win_findbuf(chat.transcript.buf)[1]
vim.api.nvim_set_current_win(win)
for address, key in pairs({ ["http://"] = "gf", ["scp://"] = "gF" }) do
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_buf(win, chat.transcript.buf) -- (a gf that opened the address showed it here)
  local lines = vim.api.nvim_buf_get_lines(chat.transcript.buf, 0, -1, false)
  local row = H.expect(vim.iter(ipairs(lines)):find(function(_, l) return l:find(address, 1, true) end),
    "the answer's line with " .. address)
  vim.api.nvim_win_set_cursor(win, { row, lines[row]:find(address, 1, true) + 2 })
  vim.cmd.normal(key)
end
H.results.buffers = vim.tbl_map(function(b) return vim.api.nvim_buf_get_name(b) end, vim.api.nvim_list_bufs())
H.results.messages = vim.fn.execute("messages")
H.finish()
