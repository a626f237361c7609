-- The chat's input area: a prompt is markdown; `/` and `#` complete (lua/ollie/input.lua).
-- (Named with a dash: Vim loads ftplugin/ollie_*.lua for the transcript's filetype `ollie` too.)
vim.bo.syntax = "markdown"
-- The regex syntax marks each `_` inside a word (a prompt naming OLLIE_MODEL or file_edit) as an error, in red.
vim.cmd("silent! syntax clear markdownError")
vim.bo.textwidth = 0
