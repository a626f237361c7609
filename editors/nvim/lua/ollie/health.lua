-- :checkhealth ollie
local M = {}

function M.check()
  vim.health.start("ollie")
  if vim.fn.has("nvim-0.10") == 1 then
    vim.health.ok("Neovim " .. tostring(vim.version()))
  else
    vim.health.error("Neovim >= 0.10 is required")
  end
  local cmd, err = require("ollie.config").server_cmd()
  if cmd then
    vim.health.ok("daemon: " .. table.concat(cmd, " "))
  else
    vim.health.error(err)
  end
  local c = require("ollie.client").get()
  if c then
    vim.health.ok("ollie-lsp is running (client id " .. c.id .. ")")
  else
    vim.health.info("ollie-lsp is not running yet (it starts on the first :Ollie)")
  end
end

return M
