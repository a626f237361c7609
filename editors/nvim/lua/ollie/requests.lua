-- The daemon's server→client requests (ollie/permission, ollie/editor/*, ollie/saveDocuments), the init flags
-- that announce them, and the small client→server helpers the review, permission and picker modules share.
local ondisk = require("ollie.ondisk") -- from setup on, it notes when each buffer's file was read or written
local M = {}

---@alias ollie.Answer fun(result: any, err: lsp.ResponseError|nil)

---A request handler that answers later: `start(params, answer)` calls `answer(result, err)` once, from any
---callback. Neovim runs a server request's handler in a coroutine (see vim.lsp.handlers'
---window/showMessageRequest), so the handler yields until the answer comes and never blocks the editor.
---@param start fun(params: table, answer: ollie.Answer)
---@return lsp.Handler
function M.async(start)
  return function(_, params, _ctx)
    local co, is_main = coroutine.running()
    if not co or is_main then
      return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, "not in a coroutine")
    end
    local answered = false
    local ok, err = pcall(start, params or {}, function(result, e)
      if answered then
        return
      end
      answered = true
      -- Scheduled: a synchronous callback (a test's vim.ui.select) must not resume before the yield.
      vim.schedule(function()
        coroutine.resume(co, result == nil and e == nil and vim.NIL or result, e)
      end)
    end)
    if not ok then
      answered = true
      return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError, tostring(err))
    end
    return coroutine.yield()
  end
end

-- What answers each request: module, function. The modules load on the first request, not at start-up.
local ROUTES = {
  ["ollie/permission"] = { "ollie.permission", "ask" },
  ["window/showMessageRequest"] = { "ollie.permission", "ask_message" },
  ["ollie/prompt"] = { "ollie.requests", "prompt" },
  ["ollie/editor/diagnostics"] = { "ollie.editor_tools", "diagnostics" },
  ["ollie/editor/definition"] = { "ollie.editor_tools", "definition" },
  ["ollie/editor/references"] = { "ollie.editor_tools", "references" },
  ["ollie/editor/symbols"] = { "ollie.editor_tools", "symbols" },
  ["ollie/editor/openFiles"] = { "ollie.editor_tools", "open_files" },
}

---The handlers of the server→client requests, for `vim.lsp.start({handlers = ...})`.
---@type table<string, lsp.Handler>
M.handlers = {}
for method, route in pairs(ROUTES) do
  M.handlers[method] = M.async(function(params, answer)
    require(route[1])[route[2]](params, answer)
  end)
end

---The loaded buffer of a file path (symlinks resolved), or nil; never creates one.
---@param path string
---@return integer|nil
local function loaded_buffer(path)
  local want = vim.uv.fs_realpath(path) or path
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name ~= "" and vim.api.nvim_buf_is_loaded(buf) and (vim.uv.fs_realpath(name) or name) == want then
      return buf
    end
  end
  return nil
end

---Whether Neovim may read `path` into a buffer: a regular file, or nothing there yet (see ondisk.not_regular).
---@param path string
---@return boolean
function M.readable_file(path)
  return ondisk.not_regular(path) == nil
end

---Why Neovim must not open absolute `path` in a buffer (nil: it may): not a regular file (see `readable_file`), or a
---link in the workspace leading out of it (a step's `ln -s ~/.ssh/id_rsa notes.txt`: the key, in a buffer of the
---workspace's name, would pass for that file's text, to the user and to the daemon).
---@param path string
---@return string|nil
function M.unopenable(path)
  local out = M.readable_file(path) and require("ollie.context").leads_out(path, vim.uv.fs_realpath(path))
  return out == false and "is not a regular file" or out and ("is " .. out) or nil
end

---`path` as a notice names it (`mods`: relative or with `~`), escaped: a step chose it (a move's new name, a link's
---target), and a line break in it forged a line of ollie's under the notice (permission.shown_path).
---@param path string
---@param mods string|nil
---@return string
local function named(path, mods)
  return require("ollie.permission").shown_path(vim.fn.fnamemodify(path, mods or ":~:."))
end

---Reload buffer `buf` (nil: every file buffer) where the disk changed under it. A buffer with unsaved changes
---stays as it is: `checktime` would stop the whole editor on Vim's W12 question (its Load drops them), and the
---user's `:w` still warns that the file changed. One whose file a step replaced by a FIFO or a device is not read
---(Neovim would hang), nor one it replaced by a link leading elsewhere (a key read into the buffer would be the file's
---text to the daemon): the user is told once, and Neovim's own reload of it is held off until that is undone.
---@param buf integer|nil
function M.checktime(buf)
  for _, b in ipairs(buf and { buf } or vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == "" then
      local name = vim.api.nvim_buf_get_name(b)
      local kind, elsewhere = ondisk.not_regular(name), ondisk.relinked(b)
      if (kind or elsewhere) and ondisk.hold(b) then
        M.notify(kind and string.format("%s is %s now, not a file: its buffer is not reloaded", named(name), kind)
          or string.format("%s is a link to %s now: its buffer is not reloaded", named(name), named(elsewhere, ":~")),
          vim.log.levels.WARN)
      elseif not (kind or elsewhere) then
        ondisk.release(b)
        if ondisk.gone(b) then -- (`silent!` hides Neovim's own E211: said here, once)
          M.notify(("%s was deleted: its buffer keeps the text (:w writes it again)"):format(named(name)),
            vim.log.levels.WARN)
        elseif not vim.bo[b].modified then
          vim.cmd("silent! checktime " .. b)
        end
      end
    end
  end
end

---Rename each file buffer whose file a step moved (`git mv a.py b.py`: a file gone, one added with its text) to the
---file's new name, its unsaved changes kept (before: the buffer kept the gone name, and a `:w` made that file again
---beside the moved one). Read there by `:edit!` (a `:w` after a bare rename is E13; its language servers see the name).
---@param diffs table[]  the `diffs` of a `tool` event's call and steps
function M.follow_moves(diffs)
  local moved = {} -- text -> the one file a step added with it (false: more than one)
  for _, d in ipairs(diffs) do
    if d.oldText == nil and type(d.newText) == "string" and type(d.path) == "string" then
      moved[d.newText] = moved[d.newText] == nil and vim.fn.fnamemodify(d.path, ":p")
    end
  end
  for _, d in ipairs(diffs) do
    local to = d.newText == nil and type(d.path) == "string" and moved[d.oldText]
    local buf = to and loaded_buffer(vim.fn.fnamemodify(d.path, ":p"))
    local name = buf and vim.api.nvim_buf_get_name(buf)
    -- Not to a name with a control character: `:mksession` writes a line break in a buffer's name as `\` and a
    -- line break, and the session file, sourced, ran the rest (`so.x.vim`) as a command (the buffer keeps its name,
    -- said deleted, as review.lua's scratch names are escaped).
    if buf and vim.bo[buf].buftype == "" and not vim.uv.fs_lstat(name) and vim.fn.bufexists(to) == 0
        and not to:find("%c") and (vim.uv.fs_lstat(to) or {}).type == "file" and not M.unopenable(to) then
      local lines, modified = vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.bo[buf].modified
      -- Detached while renamed (Neovim's reload closes only the new name): the daemon keeps no gone file open.
      local client = require("ollie.client")
      local attached = client.client_id and vim.lsp.buf_is_attached(buf, client.client_id)
      if attached then
        vim.lsp.buf_detach_client(buf, client.client_id)
      end
      vim.api.nvim_buf_call(buf, function()
        local view = vim.fn.winsaveview()
        -- The name as an argument, never spliced into a command line: a step's `m<LF>so.x.vim` ran line 2 as a
        -- command (fnameescape keeps the line break), its script outside the sandbox.
        vim.cmd.file({ vim.fn.fnamemodify(to, ":."), mods = { keepalt = true }, magic = { file = false } })
        vim.cmd("silent keepalt edit!")
        if modified then -- (undoable apart from the reload: her first `u` takes back her own change)
          vim.bo.undolevels = vim.bo.undolevels
          vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
        end
        vim.fn.winrestview(view)
      end)
      if attached then
        client.attach(buf)
      end
      M.notify(("%s moved to %s: its buffer follows it%s"):format(named(name), named(to),
        modified and ", your unsaved changes kept" or ""))
    end
  end
end

---ollie/saveDocuments: write the buffers the model just edited (only those: the user's other unsaved buffers stay
---unsaved), so the commands it runs next see its edits. One whose file changed on disk since the editor last read or
---wrote it is not written (`changedOnDisk`): that change is not in the buffer (unless the file holds the buffer's very
---text: ollie's undo or rewind put both back). `write!` then: the check is done, and
---no question may stop the editor. (A step's change under a buffer never gets here: see docs/PROTOCOL.md.)
M.handlers["ollie/saveDocuments"] = function(_, params)
  local saved, changed = {}, {}
  for _, uri in ipairs(type(params) == "table" and type(params.uris) == "table" and params.uris or {}) do
    local buf = type(uri) == "string" and loaded_buffer(vim.uri_to_fname(uri)) or nil
    if buf and ondisk.changed(buf) and not ondisk.holds(buf) then
      table.insert(changed, uri)
    elseif buf then
      local ok, err = pcall(vim.api.nvim_buf_call, buf, function() vim.cmd("silent lockmarks keepalt write!") end)
      if ok and not vim.bo[buf].modified then
        table.insert(saved, uri)
      elseif not ok then
        -- (A file the user may not write.) The model is told; the user saw the edit land and nothing else.
        local why = tostring(err):match("E%d+: [^\n]*") or tostring(err):match("[^\n]*")
        M.notify(("%s: the agent's edit is in the buffer only, not saved: %s"):format(
          vim.fn.fnamemodify(vim.uri_to_fname(uri), ":~:."), why), vim.log.levels.WARN)
      end
    end
  end
  return { saved = saved, changedOnDisk = changed }
end

---window/showMessage: the daemon's notices (a save it was refused, a bad option) through M.notify, so a long one
---never stops the editor at a "Press ENTER" prompt.
M.handlers["window/showMessage"] = function(_, params)
  local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
  if type(params) == "table" and type(params.message) == "string" then
    M.notify((params.message:gsub("^ollie: ", "")), levels[params.type] or vim.log.levels.INFO)
  end
end

---`$/cancelRequest`: the daemon no longer waits for one of its requests; a question it names goes (the module is
---loaded once a question was asked: none before).
M.handlers["$/cancelRequest"] = function(_, params)
  local permission = package.loaded["ollie.permission"]
  if permission then
    permission.cancelled(params)
  end
end

---`ollie/prompt`: one line from the user (`Ollie: Ask about this...`); null when dismissed.
---@param params table {title?, placeholder?}
---@param answer ollie.Answer
function M.prompt(params, answer)
  vim.ui.input({ prompt = (params.title or "Ask ollie") .. ": " }, function(text)
    answer(text and text ~= "" and { text = text } or vim.NIL)
  end)
end

---The initializationOptions with the flags of what this client answers merged in.
---@param opts table|nil the options built from the user's config
---@return table
function M.init_options(opts)
  return vim.tbl_extend("force", opts or {},
    -- showsAnswers: each step says how its question was answered (render.lua), so the daemon sends no
    -- "allowed: ..." line for it.
    { permissionRequest = true, promptRequest = true, editorTools = true, saveDocuments = true, showsAnswers = true })
end

---The session the current tabpage's chat shows (nil: the daemon's default session).
---@return string|nil
function M.session()
  local ok, ollie = pcall(require, "ollie")
  if not ok then
    return nil
  end
  if type(ollie.current_session) == "function" then
    return ollie.current_session()
  end
  return ollie.status and ollie.status.session or nil
end

-- While Neovim's notices of daemons' exits are kept off the screen (hush_exit_notice): the vim.notify its filter
-- stands in for, and a token per exit whose notice may still come.
---@type {notify: function, filter: function, due: table[]}|nil
local hushing = nil

---Whether vim.notify is Neovim's own (which echoes), not a plugin's (nvim-notify, snacks, fidget...).
local function stock_notify()
  local info = debug.getinfo(hushing and hushing.notify or vim.notify, "S")
  return info ~= nil and info.source:find("vim/_editor.lua", 1, true) ~= nil
end

---An exit's notice came, or will not (`token` of hush_exit_notice): with none left due, vim.notify is as it was.
local function hushed(token)
  local h = hushing
  if h then
    h.due = vim.tbl_filter(function(t) return t ~= token end, h.due)
    if #h.due == 0 then
      hushing, vim.notify = nil, vim.notify == h.filter and h.notify or vim.notify
    end
  end
end

---Keep Neovim's own notice of a daemon's exit ("Client ollie quit with exit code ... Check log for errors: <path>",
---which vim.lsp sends after the client's on_exit, whence this is called) off the screen: the plugin says its own,
---and the two (or that one alone, wider than an 80-column line) stopped the editor at a "Press ENTER" prompt
---mid-typing. vim.notify is the documented way in (`:h vim.notify()`: plugins override it); the filter takes the
---exits' notices, in order, and goes once none is due.
function M.hush_exit_notice()
  if not hushing then
    local h = { notify = vim.notify, due = {} }
    h.filter = function(msg, ...)
      if hushing == h and type(msg) == "string" and msg:find("^Client ollie quit with exit code") then
        return hushed(h.due[1])
      end
      return h.notify(msg, ...)
    end
    hushing, vim.notify = h, h.filter
  end
  local token = {}
  table.insert(hushing.due, token)
  -- No notice comes (a clean exit): the token goes once vim.lsp's callbacks, scheduled after this one's, have run.
  vim.schedule(function() vim.schedule(function() hushed(token) end) end)
end

-- A command line started at a hit-enter or more prompt (`:` typed under :messages) keeps the messages above it while
-- it is typed: ollie draws nothing over them then (a redraw or a notice wiped what she was reading), until it ends.
-- The prompt puts the key typed there (`:`) back to be read again: `at_prompt` is that key until the next one.
local at_prompt, over_messages = nil, false
vim.on_key(function(key)
  at_prompt = (vim.api.nvim_get_mode().mode:sub(1, 1) == "r" or key == at_prompt) and key or nil
end)
vim.api.nvim_create_autocmd("CmdlineEnter", { callback = function() over_messages = at_prompt ~= nil end })
vim.api.nvim_create_autocmd("CmdlineLeave", { callback = function()
  if over_messages then
    over_messages = false
    vim.schedule(M.redraw_status)
  end
end })

---Whether a command line is typed under the messages of a hit-enter or more prompt (nothing is drawn then).
---@return boolean
function M.over_messages()
  return over_messages
end

---Redraw every statusline and the tabline, but not over the messages a command line is typed under (a redraw only:
---never an error where the editor cannot draw now).
function M.redraw_status()
  if not over_messages then
    pcall(vim.cmd, "redrawstatus! | redrawtabline")
  end
end

---Tell the user something, prefixed "ollie: ". These come when an answer arrives, maybe while the user types:
---with the stock vim.notify a message wider than the command line would stop the editor at a "Press ENTER"
---prompt, so it shows on one line cut to fit (whole in `:messages`). In insert mode `-- INSERT --` would hide it at
---once (the chat opens in insert mode as a session opens, and says what is wrong with it): it shows as she leaves.
---@param msg string
---@param level integer|nil
---@param tail string|nil shown even when the text is cut: where to read it whole
function M.notify(msg, level, tail)
  local text = "ollie: " .. M.home_paths(msg)
  level = level or vim.log.levels.INFO
  if not stock_notify() or #vim.api.nvim_list_uis() == 0 then
    return vim.notify(text, level)
  end
  -- (With 'noshowmode', as a statusline plugin sets, nothing covers it: shown at once.) Under the messages a command
  -- line is typed under, it would show over them: it shows as that command line ends.
  local insert = vim.o.showmode and vim.api.nvim_get_mode().mode:find("^[iR]")
  if insert or over_messages then
    vim.api.nvim_create_autocmd(insert and "ModeChanged" or "CmdlineLeave", { pattern = insert and "*:n*" or "*",
      once = true, callback = function() vim.schedule(function() M.notify(msg, level, tail) end) end })
    return
  end
  if not (text:find("\n") or vim.fn.strdisplaywidth(text) > vim.v.echospace) then
    return vim.notify(text, level)
  end
  local hl = level >= vim.log.levels.ERROR and "ErrorMsg" or level >= vim.log.levels.WARN and "WarningMsg" or nil
  vim.schedule(function()
    -- `:messages` keeps it whole: echoed into its history while the command line is tall enough to hold it (no Press
    -- ENTER prompt, nothing drawn meanwhile), then its one line over it. Too tall for the screen: the line is kept.
    -- Not inside a command (`:OllieChat`): there each message takes a line of its own, and the two asked for Enter.
    local rows, height = 1, vim.o.cmdheight
    for _, line in ipairs(vim.split(text, "\n")) do
      rows = rows + math.max(1, math.ceil(vim.fn.strdisplaywidth(line) / vim.o.columns))
    end
    local whole = rows < vim.o.lines - 2 and pcall(vim.cmd, "noautocmd set cmdheight=" .. math.max(rows, height))
    if whole then
      vim.api.nvim_echo({ { text, hl } }, true, {})
      vim.cmd("noautocmd set cmdheight=" .. height)
    end
    vim.api.nvim_echo({ { M.one_line(text, tail), hl } }, not whole, {})
  end)
end

---`text` with each path under $HOME written from `~` (`~/.config/ollie/sandbox.yaml`), as `fnamemodify(p, ":~")`
---writes one: a notice cut to fit the command line keeps what tells the paths apart. Only a whole path: `/home/ann`
---is not `/home/anna`'s home, nor `/x/home/ann`.
---@param text string
---@return string
function M.home_paths(text)
  local home = (vim.uv.os_homedir() or ""):gsub("/+$", "")
  if home == "" then
    return text
  end
  return (text:gsub("()" .. vim.pesc(home) .. "%f[^%w_.%-]", function(at)
    local before = text:sub(at - 1, at - 1)
    return (at == 1 or not before:find("[%w_.%-/~]")) and "~" or nil
  end))
end

---`text` on one line that fits the command line (`v:echospace`), cut with "…" (then ` (tail)`) when it is longer.
---@param text string
---@param tail string|nil
---@return string
function M.one_line(text, tail)
  text = text:gsub("%s*\n%s*", " ")
  if vim.fn.strdisplaywidth(text) <= vim.v.echospace then
    return text
  end
  tail = tail and (" (" .. tail .. ")") or ""
  return vim.fn.strcharpart(text, 0, math.max(10, vim.v.echospace - 2 - vim.fn.strdisplaywidth(tail))) .. "…" .. tail
end

---The text of an error answer.
---@param err any
---@return string
function M.err_text(err)
  if type(err) == "table" then
    return err.message or vim.inspect(err)
  end
  return tostring(err)
end

---Send a request for the current session (the daemon starts if needed); `on_result(result)` runs on
---success; an error is shown, or passed to `on_error(err)` when given.
---@param method string
---@param params table|nil
---@param on_result fun(result: table)
---@param on_error fun(err: table)|nil
function M.call(method, params, on_result, on_error)
  local function failed(err)
    if on_error then
      on_error(err)
    else
      M.notify(M.err_text(err), vim.log.levels.WARN)
    end
  end
  local function send()
    local p = vim.tbl_extend("keep", params or {}, { session = M.session() })
    require("ollie.client").request(method, next(p) == nil and vim.empty_dict() or p, function(err, result)
      if err then
        return failed(err)
      end
      on_result(result or {})
    end)
  end
  if params and params.session then
    return send()
  end
  M.when_drawn(function(why)
    if why then
      return failed({ message = "not sent: " .. why })
    end
    send()
  end)
end

---Run `fn()` once this tab's chat shows its session: at once, or, while a switch (or a restart) is in flight, once
---the session switched to is drawn, so a command typed meanwhile acts on that one (`:OllieRewind undo` typed while a
---picked session loaded went to the chat's previous session: "no rewind to undo"). `fn(why)` when none came.
---@param fn fun(why: string|nil)
function M.when_drawn(fn)
  local ok, chat = pcall(require, "ollie.chat")
  local c = ok and chat.get(false) or nil
  if c and c.redrawing then
    table.insert(c.redrawing.then_run, fn)
  else
    fn()
  end
end

return M
