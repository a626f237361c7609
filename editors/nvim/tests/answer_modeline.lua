-- Red team round 23: a long answer of a code action opens (window/showDocument) as answer-N.txt, the model's text;
-- with 'modeline' on (a user's default, root's off), its `vim: set ...:` line set options, global ones too.
local out = assert(os.getenv("OLLIE_TEST_OUT"))
local start_client = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "native.lua"))
local R = {}
local plugin_dir = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)))
vim.opt.rtp:prepend(plugin_dir)
vim.cmd.runtime("plugin/ollie.lua")
vim.o.modeline = true

local ok, err = pcall(function()
  start_client()
  local code = vim.api.nvim_get_current_buf()
  vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ["end"] = { 2, 0 } }, apply = true,
                            filter = function(a) return a.title == "Ollie: Explain" end })
  R.opened = vim.wait(60000, function() return vim.api.nvim_get_current_buf() ~= code end, 20)
  R.name = vim.api.nvim_buf_get_name(0)
  R.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  R.autowriteall, R.filetype, R.keymap = vim.o.autowriteall, vim.bo.filetype, vim.bo.keymap
end)
R.failure = not ok and tostring(err) or nil
local f = assert(io.open(out, "w"))
f:write(vim.json.encode(R))
f:close()
vim.cmd("qa!")
