-- A prompt streams into the chat buffer: text, a tool block, the answer, and the agent's edit reloads the buffer.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd.edit("notes.txt")
local notes = vim.api.nvim_get_current_buf()
vim.cmd("Ollie please update the notes")
H.results.focus_stayed = vim.api.nvim_get_current_buf() == notes
-- Mid-stream: the first words are there before the turn ends.
H.wait_chat("Working on it")
H.results.mid_stream_ended = H.chat.text():find("_%(end%)_") ~= nil
H.wait_chat("_%(end%)_", 30000)
H.results.notes_after = vim.api.nvim_buf_get_lines(notes, 0, -1, false)
H.results.filetype = vim.bo[H.chat.bufnr].filetype
H.results.statusline = H.ollie.statusline()
-- Tool results are folded in the chat window.
local win = vim.fn.win_findbuf(H.chat.bufnr)[1]
local folded = 0
vim.api.nvim_win_call(win, function()
  for l = 1, vim.api.nvim_buf_line_count(H.chat.bufnr) do
    if vim.fn.foldclosed(l) ~= -1 then
      folded = folded + 1
    end
  end
end)
H.results.folded_lines = folded
-- A slash command typed at the end of the chat buffer.
vim.api.nvim_set_current_win(win)
local last = vim.api.nvim_buf_line_count(H.chat.bufnr)
vim.api.nvim_buf_set_lines(H.chat.bufnr, last, last, false, { "/usage" })
H.ollie.send_input()
H.wait_chat("_%(command%)_")
vim.cmd("checkhealth ollie")
H.results.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
H.finish()
