---@class ollie.Config
---@field cmd string[]|nil        command that starts the daemon (default: ollie-lsp on PATH, else .venv/bin/ollie-lsp)
---@field root_markers string[]   files that mark the project root (the session's working directory)
---@field agent string|nil        agent config name
---@field backend string|nil      backend override
---@field model string|nil        model override
---@field env table<string,string>|nil extra environment for tools and hooks
---@field chat {position: "right"|"left"|"bottom"|"tab", width: number, height: number}
---@field attach_buffers boolean  attach the client to file buffers so unsaved text can be context
---@field reload_changed boolean  `checktime` after each tool round so buffers show the agent's edits
local M = {}

---@type ollie.Config
M.defaults = {
  cmd = nil,
  root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Makefile" },
  agent = nil,
  backend = nil,
  model = nil,
  env = nil,
  chat = { position = "right", width = 80, height = 20 },
  attach_buffers = true,
  reload_changed = true,
}

---@type ollie.Config
M.options = vim.deepcopy(M.defaults)

---Merge user options over the defaults.
---@param opts ollie.Config|nil
function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  return M.options
end

---The command that starts the daemon.
---@return string[]|nil cmd, string|nil err
function M.server_cmd()
  local o = M.options
  if o.cmd then
    return o.cmd
  end
  if vim.fn.executable("ollie-lsp") == 1 then
    return { "ollie-lsp" }
  end
  local venv = vim.fs.joinpath(vim.fn.getcwd(), ".venv", "bin", "ollie-lsp")
  if vim.fn.executable(venv) == 1 then
    return { venv }
  end
  return nil, "ollie-lsp not found (looked on PATH and in ./.venv/bin): install it with "
    .. "`pipx install ollie-agent` (Debian/Ubuntu: `sudo apt install pipx` first) or `uv tool install ollie-agent`, "
    .. "or set require('ollie').setup({cmd = {...}})"
end

return M
