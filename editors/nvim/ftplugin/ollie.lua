-- The chat buffer reads as markdown: treesitter's where Neovim has the parser, else the regex syntax.
vim.bo.commentstring = "<!-- %s -->"
if not pcall(require("ollie.render").highlight, 0) then
  vim.bo.syntax = "markdown"
  -- The regex syntax marks each `_` inside a word (OLLIE_OPENAI_URL, file_edit) as an error, in red.
  vim.cmd("silent! syntax clear markdownError")
end
