-- The most line-height counts one T:reveal makes (each walks the whole last line: a paragraph streamed as one 128 KB
-- line costs ~5 ms a count), in g:ollie_reveal_most; the reveals in g:ollie_reveals. For the TUI test
-- (tests/editors/test_nvim_tui_small.py, through `:lua dofile(...)`).
local T = require("ollie.render").Transcript
local count, reveal, text_height = 0, T.reveal, vim.api.nvim_win_text_height
vim.g.ollie_reveal_most, vim.g.ollie_reveals = 0, 0
vim.api.nvim_win_text_height = function(...)
  count = count + 1
  return text_height(...)
end
T.reveal = function(self, win)
  count = 0
  reveal(self, win)
  vim.g.ollie_reveal_most, vim.g.ollie_reveals = math.max(vim.g.ollie_reveal_most, count), vim.g.ollie_reveals + 1
end
