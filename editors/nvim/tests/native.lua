-- Shared by the scenarios of Neovim's own LSP client with no ollie plugin set up: code.py opened, ollie-lsp started
-- on it by vim.lsp.start and initialized. Returns the client.
return function()
  vim.cmd.edit("code.py")
  local id = vim.lsp.start({ name = "ollie", cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")),
                             root_dir = vim.fn.getcwd() })
  assert(vim.wait(30000, function()
    local client = vim.lsp.get_client_by_id(id)
    return client ~= nil and client.initialized
  end, 20), "the daemon did not initialize")
  return assert(vim.lsp.get_client_by_id(id))
end
