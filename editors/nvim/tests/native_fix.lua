-- Neovim's own LSP client, no ollie plugin: `Ollie: Fix ...` from the code action menu runs a turn, and its edit
-- reaches the buffer through workspace/applyEdit. The diagnostics are another server's (Neovim sends a server only
-- its own: the README's mapping passes the line's diagnostics, as here).
local out = assert(os.getenv("OLLIE_TEST_OUT"))
local start_client = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "native.lua"))
local R = {}

local function finish(failure)
  R.failure = failure
  local f = assert(io.open(out, "w"))
  f:write(vim.json.encode(R))
  f:close()
  vim.cmd("qa!")
end

local ok, err = pcall(function()
  local client = start_client()
  R.code_action_provider = client.server_capabilities.codeActionProvider ~= nil

  local other = vim.api.nvim_create_namespace("another-server")
  vim.diagnostic.set(other, 0, { { lnum = 1, col = 11, end_lnum = 1, end_col = 16, source = "reviewer",
                                   message = "mul adds instead of multiplying" } })
  vim.api.nvim_win_set_cursor(0, { 2, 11 })
  -- The README's mapping: the line's diagnostics, whoever published them, go with the request.
  local lnum = vim.api.nvim_win_get_cursor(0)[1] - 1
  local diagnostics = vim.tbl_map(function(d)
    return { message = d.message, source = d.source,
             range = { start = { line = d.lnum, character = d.col },
                       ["end"] = { line = d.end_lnum, character = d.end_col } } }
  end, vim.diagnostic.get(0, { lnum = lnum }))
  vim.lsp.buf.code_action({ context = { diagnostics = diagnostics, only = { "quickfix" } }, apply = true })

  R.waited = vim.wait(60000, function()
    return vim.api.nvim_buf_get_lines(0, 1, 2, false)[1] == "    return a * b"
  end, 20)
  R.buffer = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  R.modified = vim.bo.modified
  -- The short answer: window/showMessage, which Neovim echoes into :messages.
  vim.wait(10000, function() return vim.fn.execute("messages"):find("mul multiplies now", 1, true) ~= nil end, 20)
  R.messages = vim.fn.execute("messages")
end)
finish(not ok and tostring(err) or nil)
