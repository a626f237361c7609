-- The chat buffer reads as markdown.
vim.bo.syntax = "markdown"
vim.bo.commentstring = "<!-- %s -->"
pcall(vim.treesitter.start, 0, "markdown")
