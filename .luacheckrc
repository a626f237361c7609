-- luacheck for the Neovim plugin (scripts/lint runs `luacheck editors/nvim`).
std = "luajit"
-- Neovim's API table; the plugin sets fields on it (vim.g, vim.b, vim.opt_local ...).
globals = { "vim" }
max_line_length = 120
exclude_files = { "editors/vscode/**", "tests/acp/ts/**" }
