-- The editor's knowledge for the model (ollie/editor/* requests, docs/PROTOCOL.md): diagnostics from
-- vim.diagnostic, definitions, references and symbols from the attached language servers, the open files.
-- Paths are absolute, lines and columns 1-based (columns in characters). Each answer comes fast: what the
-- editor has, never a long wait for a language server.
local requests = require("ollie.requests")

local M = {}

-- How long to wait for a language server to attach to a buffer loaded for a request, and to answer.
M.attach_ms = 2000
M.answer_ms = 3000
-- How long to wait for a server to republish diagnostics after a buffer was reloaded from disk.
M.republish_ms = 1500
M.quiet_ms = 300

local SEVERITY = { "error", "warning", "information", "hint" }
local has_011 = vim.fn.has("nvim-0.11") == 1

local function failed(msg)
  return vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.RequestFailed, msg)
end

local function invalid(msg)
  return vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InvalidParams, msg)
end

local function clamp(n, text)
  return math.max(0, math.min(n, #text))
end

-- Offsets within a line: characters (the wire), bytes (Neovim), code units of a server's offset encoding.
local function char_to_byte(text, char)
  if has_011 then
    return vim.str_byteindex(text, "utf-32", char, false)
  end
  local ok, b = pcall(vim.str_byteindex, text, char)
  return ok and b or #text
end

local function byte_to_units(text, byte, enc)
  byte = clamp(byte, text)
  if has_011 then
    return vim.str_utfindex(text, enc, byte, false)
  end
  local u32, u16 = vim.str_utfindex(text, byte)
  return enc == "utf-8" and byte or (enc == "utf-16" and u16 or u32)
end

local function units_to_byte(text, units, enc)
  if has_011 then
    return vim.str_byteindex(text, enc, units, false)
  end
  if enc == "utf-8" then
    return clamp(units, text)
  end
  local ok, b = pcall(vim.str_byteindex, text, units, enc == "utf-16")
  return ok and b or #text
end

local function byte_to_char(text, byte)
  return byte_to_units(text, byte, "utf-32")
end

local function norm(path)
  return vim.fs.normalize(path)
end

---The loaded buffer of an absolute path, or nil.
---@param path string
---@return integer|nil
function M.buffer_of(path)
  local want = norm(path)
  local real = vim.uv.fs_realpath(want)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      local name = vim.api.nvim_buf_get_name(b)
      if name ~= "" and (norm(name) == want or (real and vim.uv.fs_realpath(name) == real)) then
        return b
      end
    end
  end
  return nil
end

---Line `lnum` (0-based) of `path`: from its buffer when loaded, else from the file.
local function line_of(path, lnum, cache)
  local b = M.buffer_of(path)
  if b then
    return vim.api.nvim_buf_get_lines(b, lnum, lnum + 1, false)[1] or ""
  end
  -- A server may point into a FIFO a step made (readfile would wait on it for good) or a link to /dev/zero: checked
  -- and read in one open, as a step may swap either in after a check by name.
  if not cache[path] then
    local data = require("ollie.context").read(path, path)
    cache[path] = data and vim.split(data, "\n", { plain = true }) or {}
  end
  return cache[path][lnum + 1] or ""
end

---The language servers (not ollie itself) attached to `bufnr` that serve `method`.
local function servers(bufnr, method)
  local all = vim.lsp.get_clients({ bufnr = bufnr, method = method })
  return vim.tbl_filter(function(c) return c.name ~= "ollie" end, all)
end

---Is `path` (absolute) `dir` or under it?
local function under(path, dir)
  dir = norm(dir)
  return path == dir or vim.startswith(path, dir:gsub("/$", "") .. "/")
end

---One vim.diagnostic item on the wire.
local function wire_diagnostic(d)
  local path = vim.api.nvim_buf_get_name(d.bufnr)
  local lines = vim.api.nvim_buf_is_loaded(d.bufnr)
    and vim.api.nvim_buf_get_lines(d.bufnr, d.lnum, (d.end_lnum or d.lnum) + 1, false) or {}
  local first, last = lines[1] or "", lines[#lines] or ""
  local item = {
    path = norm(path), line = d.lnum + 1, column = byte_to_char(first, d.col or 0) + 1,
    severity = SEVERITY[d.severity] or "information", message = d.message,
  }
  if d.end_lnum then
    item.endLine = d.end_lnum + 1
    item.endColumn = byte_to_char(last, d.end_col or 0) + 1
  end
  if d.source then
    item.source = d.source
  end
  if type(d.code) == "string" or type(d.code) == "number" then
    item.code = d.code
  end
  return item
end

-- At most this many diagnostics per answer (errors first): a workspace with a huge number of them
-- must not make the daemon decode megabytes on its event loop; the model gets a capped list anyway.
M.MAX_DIAGNOSTICS = 500

---The diagnostics of `wanted` paths (nil: all) as the wire has them, the most severe first, capped.
local function collect(wanted)
  local kept = {}
  for _, d in ipairs(vim.diagnostic.get(nil)) do
    local name = vim.api.nvim_buf_is_valid(d.bufnr) and vim.api.nvim_buf_get_name(d.bufnr) or ""
    if name ~= "" and name:sub(1, 1) == "/" and vim.bo[d.bufnr].buftype == "" then
      local keep = wanted == nil
      for _, p in ipairs(wanted or {}) do
        keep = keep or under(norm(name), p)
      end
      if keep then
        table.insert(kept, d)
      end
    end
  end
  -- vim.diagnostic.severity: ERROR is 1; a stable order within a severity (the index breaks ties).
  local order = {}
  for i, d in ipairs(kept) do
    order[d] = i
  end
  table.sort(kept, function(a, b)
    local sa, sb = a.severity or 4, b.severity or 4
    if sa ~= sb then
      return sa < sb
    end
    return order[a] < order[b]
  end)
  local out = {}
  for i = 1, math.min(#kept, M.MAX_DIAGNOSTICS) do
    table.insert(out, wire_diagnostic(kept[i]))
  end
  return out
end

---Reload the buffers of `paths` (nil: all file buffers) that changed on disk; the ones that did and have a
---language server, whose diagnostics are now out of date.
local function reload(paths)
  local stale = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and name ~= "" then
      local wanted = paths == nil
      for _, p in ipairs(paths or {}) do
        wanted = wanted or under(norm(name), p)
      end
      if wanted then
        local tick = vim.api.nvim_buf_get_changedtick(b)
        requests.checktime(b)
        if vim.api.nvim_buf_get_changedtick(b) ~= tick and #servers(b, nil) > 0 then
          stale[b] = true
        end
      end
    end
  end
  return stale
end

---The wanted paths whose diagnostics are of their content now: a buffer no language server is attached to (none
---will change them), one whose server republished after its reload (`republished`), and, while no language
---server runs at all, a file with no buffer (only a server's workspace diagnostics could ever name it).
---@param paths string[]
---@param republished table<integer, boolean>
---@return string[]
local function up_to_date(paths, republished)
  local any_server = #vim.tbl_filter(function(c) return c.name ~= "ollie" end, vim.lsp.get_clients()) > 0
  local out = {}
  for _, p in ipairs(paths) do
    local b = M.buffer_of(p)
    if (b and (republished[b] or #servers(b, nil) == 0)) or (not b and not any_server) then
      table.insert(out, p)
    end
  end
  return out
end

---ollie/editor/diagnostics `{paths?}` → `{diagnostics, upToDate?}`; buffers changed on disk are reloaded
---first and their servers get a moment to republish.
---@param params {paths: string[]|nil}
---@param answer ollie.Answer
function M.diagnostics(params, answer)
  local paths = params.paths
  if paths == vim.NIL then
    paths = nil
  end
  if paths ~= nil and type(paths) ~= "table" then
    return answer(nil, invalid("paths: a list of absolute paths"))
  end
  local stale = reload(paths)
  local republished = {}
  local function reply()
    answer({ diagnostics = collect(paths), upToDate = paths and up_to_date(paths, republished) or nil })
  end
  if next(stale) == nil then
    return reply()
  end
  local done, autocmd = false, nil
  local function finish()
    if not done then
      done = true
      pcall(vim.api.nvim_del_autocmd, autocmd)
      reply()
    end
  end
  autocmd = vim.api.nvim_create_autocmd("DiagnosticChanged", {
    callback = function(ev)
      if not stale[ev.buf] then
        return
      end
      -- `sure`: the server sent diagnostics; an empty list may still be the reload's clearing (not upToDate).
      local function fresh(sure)
        stale[ev.buf], republished[ev.buf] = nil, sure
        if next(stale) == nil then
          finish()
        end
      end
      -- A reload clears a buffer's diagnostics before its server republishes them: an empty list is
      -- taken as the answer only when nothing follows it for a moment.
      if #((ev.data or {}).diagnostics or {}) > 0 then
        return fresh(true)
      end
      local seq = (stale[ev.buf] == true and 0 or stale[ev.buf]) + 1
      stale[ev.buf] = seq
      vim.defer_fn(function()
        if stale[ev.buf] == seq then
          fresh(false)
        end
      end, M.quiet_ms)
    end,
  })
  vim.defer_fn(finish, M.republish_ms)
end

---A loaded buffer for `path` (loading it), then `cb(bufnr)` once a language server serving `method` is
---attached, or after M.attach_ms with whatever is attached; `cb(nil, why)` for a file Neovim must not read.
local function with_buffer(path, method, cb)
  local b = M.buffer_of(path)
  if not b then
    if not vim.uv.fs_stat(path) then
      return cb(nil, "no such file")
    end
    -- The model names the file: a FIFO a step made would hold Neovim for good (its open waits on a writer), a
    -- huge file fill its memory, a link to a secret swapped in after a check by name be loaded as the file. So the
    -- buffer gets the bytes of the one open that checked them, never Neovim's own read by name.
    local data, why = require("ollie.context").read(path, path)
    if not data then
      return cb(nil, why)
    end
    b = vim.fn.bufadd(path)
    vim.api.nvim_create_autocmd("BufReadCmd", { buffer = b, once = true, callback = function()
      vim.api.nvim_buf_set_lines(b, 0, -1, false, vim.split(data:gsub("\n$", ""), "\n", { plain = true }))
      vim.bo[b].modified = false
    end })
    vim.fn.bufload(b)
    vim.bo[b].buflisted = false
    -- A buffer loaded in the background gets its filetype (and so its language servers) on demand.
    if vim.bo[b].filetype == "" then
      vim.api.nvim_buf_call(b, function() vim.cmd("silent! filetype detect") end)
    end
  end
  if #servers(b, method) > 0 then
    return cb(b)
  end
  local waited = 0
  local timer = assert(vim.uv.new_timer())
  timer:start(50, 50, vim.schedule_wrap(function()
    waited = waited + 50
    if timer:is_closing() then
      return
    end
    if #servers(b, method) > 0 or waited >= M.attach_ms then
      timer:close()
      cb(b)
    end
  end))
end

---Send `method` to every server in `clients` (params built per client's encoding); `cb(results)` once
---all answered or after M.answer_ms: a list of {client, result}.
local function ask_all(clients, method, make_params, bufnr, cb)
  local results, pending, done = {}, #clients, false
  local function finish()
    if not done then
      done = true
      cb(results)
    end
  end
  for _, c in ipairs(clients) do
    local handler = function(err, result)
      if not err and result and result ~= vim.NIL then
        table.insert(results, { client = c, result = result })
      end
      pending = pending - 1
      if pending == 0 then
        finish()
      end
    end
    local ok
    if has_011 then
      ok = c:request(method, make_params(c), handler, bufnr)
    else
      ok = c.request(method, make_params(c), handler, bufnr)
    end
    if not ok then
      pending = pending - 1
    end
  end
  if pending == 0 then
    finish()
  else
    vim.defer_fn(finish, M.answer_ms)
  end
end

---An LSP range of `uri` as a wire location `{path, line, column, endLine, endColumn}`.
local function wire_location(uri, range, enc, cache)
  local path = norm(vim.uri_to_fname(uri))
  local s, e = range.start, range["end"]
  local first = line_of(path, s.line, cache)
  local column = byte_to_char(first, units_to_byte(first, s.character, enc)) + 1
  local item = { path = path, line = s.line + 1, column = column }
  if e then
    local last = e.line == s.line and first or line_of(path, e.line, cache)
    item.endLine = e.line + 1
    item.endColumn = byte_to_char(last, units_to_byte(last, e.character, enc)) + 1
  end
  return item
end

---Locations (Location, LocationLink, or a list of them) from every server, without duplicates.
local function wire_locations(results)
  local out, seen, cache = {}, {}, {}
  for _, r in ipairs(results) do
    local list = (r.result.uri or r.result.targetUri) and { r.result } or r.result
    for _, loc in ipairs(list) do
      local uri = loc.targetUri or loc.uri
      local range = loc.targetSelectionRange or loc.range
      if uri and range then
        local item = wire_location(uri, range, r.client.offset_encoding or "utf-16", cache)
        local key = item.path .. ":" .. item.line .. ":" .. item.column
        if not seen[key] then
          seen[key] = true
          table.insert(out, item)
        end
      end
    end
  end
  return out
end

---definition and references: the position's answers from the buffer's language servers.
local function locate(method, params, answer, extra)
  if type(params.path) ~= "string" or type(params.line) ~= "number" or type(params.column) ~= "number" then
    return answer(nil, invalid("path, line, column: an absolute path and a 1-based line and column"))
  end
  local path = norm(params.path)
  with_buffer(path, method, function(b, why)
    if not b then
      return answer(nil, failed(path .. ": " .. why))
    end
    local clients = servers(b, method)
    if #clients == 0 then
      return answer(nil, failed("no language server in the editor answers " .. method .. " for " .. path))
    end
    local text = vim.api.nvim_buf_get_lines(b, params.line - 1, params.line, false)[1] or ""
    local byte = char_to_byte(text, math.max(0, params.column - 1))
    ask_all(clients, method, function(c)
      return vim.tbl_extend("force", {
        textDocument = { uri = vim.uri_from_bufnr(b) },
        position = { line = params.line - 1, character = byte_to_units(text, byte, c.offset_encoding or "utf-16") },
      }, extra or {})
    end, b, function(results)
      answer({ locations = wire_locations(results) })
    end)
  end)
end

---ollie/editor/definition `{path, line, column}` → `{locations}`.
---@param params table
---@param answer ollie.Answer
function M.definition(params, answer)
  locate("textDocument/definition", params, answer)
end

---ollie/editor/references `{path, line, column}` → `{locations}` (the declaration included).
---@param params table
---@param answer ollie.Answer
function M.references(params, answer)
  locate("textDocument/references", params, answer, { context = { includeDeclaration = true } })
end

---ollie/editor/symbols `{query}` → `{symbols}`: workspace symbols from every running language server.
---@param params {query: string}
---@param answer ollie.Answer
function M.symbols(params, answer)
  if type(params.query) ~= "string" then
    return answer(nil, invalid("query: a string"))
  end
  local clients = vim.tbl_filter(function(c) return c.name ~= "ollie" end,
    vim.lsp.get_clients({ method = "workspace/symbol" }))
  if #clients == 0 then
    return answer(nil, failed("no language server running in the editor answers workspace/symbol"))
  end
  ask_all(clients, "workspace/symbol", function() return { query = params.query } end, nil, function(results)
    local out, cache = {}, {}
    for _, r in ipairs(results) do
      for _, sym in ipairs(r.result) do
        local loc = sym.location or {}
        local range = loc.range or { start = { line = 0, character = 0 } }
        if loc.uri then
          local at = wire_location(loc.uri, range, r.client.offset_encoding or "utf-16", cache)
          local kind = vim.lsp.protocol.SymbolKind[sym.kind]
          table.insert(out, {
            name = sym.name, kind = type(kind) == "string" and kind:lower() or "other", path = at.path,
            line = at.line, column = at.column,
            container = (sym.containerName and sym.containerName ~= "") and sym.containerName or nil,
          })
        end
      end
    end
    answer({ symbols = out })
  end)
end

---ollie/editor/openFiles `{}` → `{files: [{path, focused, dirty}]}`: the listed file buffers. The focused
---one is the current window's, or (from the chat) the window the user came from.
---@param _params table
---@param answer ollie.Answer
function M.open_files(_params, answer)
  local focused = vim.api.nvim_get_current_buf()
  if vim.bo[focused].buftype ~= "" then
    local prev = vim.fn.win_getid(vim.fn.winnr("#"))
    focused = prev ~= 0 and vim.api.nvim_win_get_buf(prev) or focused
  end
  local files = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if vim.bo[b].buflisted and vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" and name ~= "" then
      table.insert(files, { path = norm(vim.fn.fnamemodify(name, ":p")), focused = b == focused,
        dirty = vim.bo[b].modified })
    end
  end
  answer({ files = files })
end

return M
