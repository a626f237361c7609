-- The LSP client of ollie-lsp: start it, send requests, route its notifications.
local config = require("ollie.config")

local M = {}

---@type integer|nil
M.client_id = nil
---@type table<string, fun(params: table)>
M.listeners = {}

local function root_dir()
  local found = vim.fs.find(config.options.root_markers, { upward = true, path = vim.fn.getcwd() })[1]
  return found and vim.fs.dirname(found) or vim.fn.getcwd()
end

local function dispatch(method)
  return function(err, params)
    if err then
      return
    end
    local fn = M.listeners[method]
    if fn then
      fn(params)
    end
  end
end

---The running client, or nil.
---@return vim.lsp.Client|nil
function M.get()
  if M.client_id then
    local c = vim.lsp.get_client_by_id(M.client_id)
    if c and not (c.is_stopped and c:is_stopped()) then
      return c
    end
  end
  return nil
end

---Start the daemon (once) and return the client.
---@param bufnr integer buffer to attach first (the chat buffer)
---@return vim.lsp.Client|nil client, string|nil err
function M.ensure(bufnr)
  local c = M.get()
  if c then
    return c
  end
  local cmd, err = config.server_cmd()
  if not cmd then
    return nil, err
  end
  local o = config.options
  local init = { agent = o.agent, backend = o.backend, model = o.model, env = o.env }
  local id = vim.lsp.start({
    name = "ollie",
    cmd = cmd,
    root_dir = root_dir(),
    init_options = init,
    handlers = {
      ["ollie/event"] = dispatch("ollie/event"),
      ["ollie/stateChanged"] = dispatch("ollie/stateChanged"),
    },
  }, { bufnr = bufnr, reuse_client = function(client, conf) return client.name == conf.name end })
  if not id then
    return nil, "could not start " .. table.concat(cmd, " ")
  end
  M.client_id = id
  if o.attach_buffers then
    -- The file buffers already open: the model's file tools see (and edit) their unsaved text.
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
        M.attach(buf)
      end
    end
  end
  return vim.lsp.get_client_by_id(id)
end

---Send a request; `cb(err, result)` runs on the main loop.
---@return integer|nil request_id
function M.request(method, params, cb)
  local c = M.get()
  if not c then
    cb({ message = "ollie-lsp is not running" }, nil)
    return nil
  end
  local handler = function(err, result)
    cb(err, result)
  end
  local ok, rid
  if vim.fn.has("nvim-0.11") == 1 then
    ok, rid = c:request(method, params, handler)
  else
    ok, rid = c.request(method, params, handler)
  end
  return ok and rid or nil
end

---Send a request and wait for its answer (for short requests only).
---@return table|nil result, table|nil err
function M.request_sync(method, params, timeout_ms)
  local done, res, e = false, nil, nil
  M.request(method, params, function(err, result)
    done, res, e = true, result, err
  end)
  vim.wait(timeout_ms or 10000, function() return done end, 10)
  if not done then
    return nil, { message = method .. " timed out" }
  end
  return res, e
end

---Attach the client to a buffer (so the daemon sees its unsaved text and the file tools edit it).
function M.attach(bufnr)
  if M.client_id and not vim.lsp.buf_is_attached(bufnr, M.client_id) then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
end

return M
