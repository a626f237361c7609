-- The LSP client of ollie-lsp: start it, send requests, route its notifications. Everything is async:
-- nothing here waits (no vim.wait); answers come to callbacks on the main loop.
--
-- API for the other modules:
--   client.ensure()                     start the daemon once; returns the client, or nil (and err when it cannot
--                                       start; no err while a start or an exit is under way)
--   client.stopped()                    the plugin gave up restarting a daemon that kept dying: none runs
--   client.on_retry = fn                fn(): restart the daemon as :OllieRestart does; a start after the plugin gave
--                                       up restarting one that kept dying asks for it
--   client.request(method, params, cb)  cb(err, result) on the main loop; returns the request id
--   client.cancel(request_id)           $/cancelRequest
--   client.listeners[method] = fn       fn(params) for the notifications ollie/event, ollie/stateChanged
--   client.seen(session)                the `seq` of the last ollie/event of `session` the user has (0: none yet)
--   client.saw(session, seq)            an ollie/context answer drew the session's events up to `seq`
--   client.attach(bufnr)                let the daemon see a buffer's unsaved text
--   client.restart(done)                stop the daemon, start a fresh one once the old one exited; done(err)
--   client.when_up(fn)                  fn() once the daemon started has answered `initialize` (never if it dies first)
--   client.on_died = fn                 fn(why, restart): a daemon stopped unasked; restart: the plugin restarts it
--                                       (false: it died again within a minute of such a restart, and is left so)
--   client.with_action_session = fn     fn(run): run(session) in the session a picked code action runs in (nil: the
--                                       daemon's default), once the chat has it
-- Server->client requests: lua/ollie/requests.lua, when present, is already wired here (no line to add):
-- its `handlers` table (method -> LSP handler) is merged into the client's handlers, and its
-- `init_options(init) -> init` adds its flags (permissionRequest, ...) to initializationOptions.
local config = require("ollie.config")

local M = {}

---@type integer|nil
M.client_id = nil
---@type table<string, fun(params: table)>
M.listeners = {}
---@type (fun(run: fun(session: string|nil)))|nil
M.with_action_session = nil
-- Callbacks waiting for a client's daemon to exit, by client id (restart).
---@type table<integer, fun()>
local on_exited = {}
-- The answers each daemon owes, by client id: Neovim drops them when its daemon dies, and a chat would wait for its
-- prompt's answer forever (running, the prompt gone from the input). The daemon's exit answers each with GONE.
---@type table<integer, table<table, fun(err: table|nil, result: any)>>
local owed = {}
M.GONE = { message = "the ollie daemon stopped: :OllieRestart starts it again with the chats' sessions" }
---@type fun(why: string, restart: boolean)|nil
M.on_died = nil
-- After the plugin gave up restarting a daemon that kept dying, the next start is a restart (:OllieRestart's: each
-- chat's session loaded in the daemon it starts; before, a prompt's start had none, and said "session not found").
---@type fun()|nil
M.on_retry = nil
-- While a restart waits for the old daemon to exit, requests wait here, each run once the next has started (or told
-- why it could not). Before, the first of them started it at once, the old one still there: two daemons.
---@type fun(err: string|nil)[]|nil
local waiting = nil
-- Requests made after the daemon's process exited and before Neovim said so (on_exit, once its pipes have closed: some
-- loop turns later, on a loaded machine long enough for a keypress) wait here for what its exit brings. Before, the
-- first started a daemon at once, and the exit's own restart then a second (two starts of each broken one).
---@type fun(err: string|nil)[]|nil
local after_exit = nil
-- When each daemon the plugin restarted after a crash started (vim.uv.now()): one that dies within a minute is left
-- stopped, not restarted in a loop.
---@type table<integer, integer>
local auto_started = {}
-- Whether the next daemon started is such a restart.
local auto_next = false
-- Set when the plugin gave up restarting a daemon that kept dying, until a daemon comes up (answers `initialize`):
-- one started meanwhile (by a prompt, :OllieRestart) that dies is left so, and says why. Before, it was taken for a
-- first crash and restarted: two starts per prompt the user sent.
local gave_up = false
-- What waits for each daemon to come up (answer `initialize`), by client id: a restart says "restarted" then, not as
-- its process starts (a cold one under load takes seconds; one that dies first never came up).
---@type table<integer, fun()[]>
local on_up = {}
-- The daemons started while `gave_up`, by client id, until they come up.
---@type table<integer, boolean>
local retried = {}
-- The `seq` of the last `ollie/event` per session the user has from the running daemon (a fresh one counts from 1):
-- received, or told by an `ollie/context` answer drawn.
---@type table<string, integer>
local seen = {}

---The `seq` of the last `ollie/event` of `session` the user has from the running daemon (0: none yet): an
---ollie/queue says it, so the daemon knows whether the user saw the turn running or already ended.
---@param session string
---@return integer
function M.seen(session)
  return seen[session] or 0
end

---The user has the session's events up to `seq`: received, or drawn from an `ollie/context` answer, which tells
---them all up to its `seq` (a chat that shows a session whose turns ran before it had any of their events).
---@param session string
---@param seq integer
function M.saw(session, seq)
  seen[session] = math.max(seen[session] or 0, seq)
end

---Whether `dir` may be the project a marker found above the working directory names: the user's own, and not
---writable by others. Anyone may put a `.git` or a `Makefile` in /tmp: the session (its steps may write all of its
---root) would then work on every user's temp files, and read that user's `.mcp.json`, README and branch.
---@param dir string
---@return boolean
local function own_dir(dir)
  local stat = vim.uv.fs_stat(dir)
  return stat ~= nil and stat.uid == vim.uv.getuid() and stat.mode % 4 < 2 -- (2: others may write)
end

---The session's root: the nearest dir above the working directory holding a root marker, when it is the user's
---own; else the working directory itself.
---@return string
function M.root_dir()
  local cwd = vim.fn.getcwd()
  local found = vim.fs.find(config.options.root_markers, { upward = true, path = cwd })[1]
  local dir = found and vim.fs.dirname(found)
  return dir and own_dir(dir) and dir or cwd
end

-- Not while Neovim exits: the terminal closed, it closed the buffers' memory and waits in vim.lsp's VimLeavePre for
-- the daemon; a turn's end drawn then failed (E315), and the error's "-- More --" waited for a key no terminal would
-- send, the daemon with it, for good.
local function dispatch(method)
  return function(err, params)
    if err or vim.v.exiting ~= vim.NIL then
      return
    end
    local fn = M.listeners[method]
    if fn then
      fn(params)
    end
  end
end

---workspace/applyEdit as Neovim's own handler does it, without its `print` of the label: a message per
---edit during a streamed turn is what piled up into a "Press ENTER" prompt.
local function apply_edit(_, params, ctx)
  local c = vim.lsp.get_client_by_id(ctx.client_id)
  if not (params and params.edit and c) then
    return { applied = false, failureReason = "no edit" }
  end
  -- A read-only buffer (a file the user may not write) took the edit with Vim's W10 warning and a one-second pause
  -- of the whole editor; the agent's save writes it regardless (`write!`).
  local uris = vim.tbl_keys(params.edit.changes or {})
  for _, change in ipairs(params.edit.documentChanges or {}) do
    table.insert(uris, change.textDocument and change.textDocument.uri)
  end
  -- The edit is an undo step of its own (setting 'undolevels' closes the buffer's undo block): while the user types
  -- in that buffer, insert mode keeps one block open, and `u` undid the agent's edit with all they typed around it.
  local loaded = vim.tbl_filter(vim.api.nvim_buf_is_loaded, vim.tbl_map(vim.uri_to_bufnr, uris))
  for _, buf in ipairs(loaded) do
    vim.bo[buf].readonly = false
    vim.bo[buf].undolevels = vim.bo[buf].undolevels
  end
  local ok, result = pcall(vim.lsp.util.apply_workspace_edit, params.edit, c.offset_encoding)
  for _, buf in ipairs(loaded) do
    vim.bo[buf].undolevels = vim.bo[buf].undolevels
  end
  return { applied = ok, failureReason = not ok and tostring(result) or nil }
end

---`ollie.codeAction`, the command of a code action the user picked: run by the daemon as Neovim would ask it, once
---the selection it took is left and the screen redrawn. The stock vim.ui.select (inputlist), called from the code
---action's answer, left its list on the screen and Neovim at a "Press ENTER" prompt that took the next key, and
---Visual mode's "-- VISUAL --" hid the action's answer in the command line.
---@param command lsp.Command
local function run_code_action(command)
  if vim.fn.mode():find("^[vV\22]") then
    vim.cmd("normal! " .. vim.keycode("<Esc>"))
  end
  vim.cmd("redraw")
  -- The turn runs in the session of the chat the user has, not the daemon's default: after :OllieNew or
  -- :OllieSessions that one is in no chat, and its answer showed only as a line cut short in the command line.
  local function run(session)
    local args = command.arguments
    if session and type(args) == "table" and type(args[1]) == "table" and args[1].session == nil then
      args = { vim.tbl_extend("force", args[1], { session = session }) }
    end
    M.request("workspace/executeCommand", { command = command.command, arguments = args }, function(err)
      if err then
        local requests = require("ollie.requests")
        requests.notify(requests.err_text(err), vim.log.levels.WARN)
      end
    end)
  end
  if M.with_action_session then
    M.with_action_session(run)
  else
    run(nil)
  end
end

---The handlers of the notifications and the server->client requests (ollie.requests, when present).
local function handlers()
  local ok, requests = pcall(require, "ollie.requests")
  local hs = ok and type(requests.handlers) == "table" and vim.deepcopy(requests.handlers) or {}
  local event = dispatch("ollie/event")
  hs["ollie/event"] = function(err, params)
    if not err and type(params) == "table" and type(params.session) == "string" and type(params.seq) == "number" then
      M.saw(params.session, params.seq)
    end
    event(err, params)
  end
  hs["ollie/stateChanged"] = dispatch("ollie/stateChanged")
  hs["workspace/applyEdit"] = hs["workspace/applyEdit"] or apply_edit
  return hs
end

---initializationOptions: the config's, plus the flags the request handlers announce.
local function init_options()
  local init = config.init_options()
  local ok, requests = pcall(require, "ollie.requests")
  if ok and type(requests.init_options) == "function" then
    init = requests.init_options(init)
  end
  return init
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

---Whether the plugin gave up restarting a daemon that kept dying (none runs until a request, or :OllieRestart, asks).
---@return boolean
function M.stopped()
  return gave_up and not (M.client_id or waiting)
end

---Whether a restart waits for the old daemon to exit (none is running meanwhile).
---@return boolean
function M.restarting()
  return waiting ~= nil
end

---Start the daemon (once) and return the client; it initializes in the background. Nil and no error while the last
---one's exit is not told yet (requests wait for it: after_exit), or while the restart it asks for after a give-up
---(on_retry) is on its way.
---@param quiet boolean|nil start it, even after the plugin gave up (a restart's own start)
---@return vim.lsp.Client|nil client, string|nil err
function M.ensure(quiet)
  local c = M.get()
  if c or waiting or M.client_id then -- (waiting: the next daemon is on its way; client_id: its exit says what's next)
    return c
  end
  local cmd, err = config.server_cmd()
  if not cmd then
    return nil, err
  end
  if gave_up and not quiet and M.on_retry then
    M.on_retry() -- (its restart's start comes back here, quiet)
    return M.get()
  end
  local id = vim.lsp.start({
    name = "ollie",
    cmd = cmd,
    root_dir = M.root_dir(),
    init_options = init_options(),
    handlers = handlers(),
    commands = { ["ollie.codeAction"] = run_code_action },
    -- Edits reach the daemon at once, so a prompt sent right after typing has them as its context.
    -- exit_timeout: when the editor quits, a daemon still busy (a turn running) gets a second to exit after
    -- `shutdown`, then SIGTERM; without it Neovim leaves it running, orphaned.
    flags = { debounce_text_changes = 0, exit_timeout = 1000 },
    -- The statuslines said "starting" until now (a cold daemon under load takes seconds).
    on_init = function(up)
      retried[up.id], gave_up = nil, false
      pcall(vim.cmd.redrawstatus, { bang = true })
      for _, fn in ipairs(on_up[up.id] or {}) do
        fn()
      end
      on_up[up.id] = nil
    end,
    on_exit = function(code, signal, client_id)
      require("ollie.requests").hush_exit_notice() -- the plugin says its own
      vim.schedule(function()
        -- (Read here, not before the schedule: a restart asked for until now waits for this exit too.)
        local done, unanswered, auto = on_exited[client_id], owed[client_id] or {}, auto_started[client_id]
        local retry = retried[client_id]
        on_exited[client_id], owed[client_id], auto_started[client_id], retried[client_id] = nil, nil, nil, nil
        on_up[client_id] = nil
        local again, queued, why_not = auto and vim.uv.now() - auto < 60000, nil, nil
        if M.client_id == client_id then
          M.client_id, queued, after_exit = nil, after_exit, nil
        end
        -- Not asked to stop (a restart's stop, the editor quitting), it died: one is started in its place (on_died)
        -- before the answers it owed come, so that what they send goes there (the first would start one of its own).
        if not done and vim.v.exiting == vim.NIL and (code ~= 0 or signal ~= 0) then
          local why = ("the ollie daemon stopped (%s %d)"):format(signal ~= 0 and "signal" or "exit code",
            signal ~= 0 and signal or code)
          if again then
            why = why .. " again, within a minute of its restart: not restarted; :OllieRestart starts it"
          elseif retry then
            why = why .. " again before it came up: not restarted; :OllieRestart starts it"
          end
          again = again or retry
          auto_next, gave_up, why_not = not again, gave_up or again, again and why or nil
          if M.on_died then
            M.on_died(why, not again)
          end
        end
        for _, fn in ipairs(queued or {}) do
          fn(why_not) -- (sent again: to the restart's daemon, or one they start)
        end
        for _, answer in pairs(unanswered) do
          answer(M.GONE, nil) -- (a prompt's answer tells by `seen` whether its turn began)
        end
        seen = {} -- the next daemon counts its events from 1
        if done then
          done()
        end
      end)
    end,
  }, {
    -- The chat's own buffers are no documents: attach file buffers only (below).
    attach = false,
    silent = true,
    -- Never one that is stopping (a restart starts the next before the old one has gone).
    reuse_client = function(client, conf) return client.name == conf.name and not client:is_stopped() end,
  })
  if not id then
    return nil, "could not start " .. table.concat(cmd, " ")
  end
  M.client_id = id
  auto_started[id], auto_next, retried[id] = auto_next and vim.uv.now() or nil, false, gave_up or nil
  if config.options.attach_buffers then
    -- The file buffers already open: the model's file tools see (and edit) their unsaved text.
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      M.attach(buf)
    end
  end
  return vim.lsp.get_client_by_id(id)
end

---Stop the daemon and start a fresh one (it reads the configuration again: a model or key set since) once the old
---one has exited and so let go of its sessions; `done(err)` then runs (err: why it could not start).
---A restart asked for while one is under way waits for it: one daemon, started once.
---@param done fun(err: string|nil)
function M.restart(done)
  if waiting then
    return table.insert(waiting, done)
  end
  local id, old = M.client_id, M.get()
  M.client_id, waiting, after_exit = nil, after_exit or {}, nil
  local started = false
  local function start()
    if started then
      return
    end
    local list = waiting or {}
    started, waiting = true, nil
    local _, err = M.ensure(true)
    done(err)
    for _, fn in ipairs(list) do
      fn(err)
    end
  end
  if not id then
    -- (Scheduled: the restart's "restarting…" and its outcome, said in one go, stopped the editor at "Press ENTER".)
    return vim.schedule(start)
  end
  on_exited[id] = start
  if not old then
    return -- its process has exited already: the next starts once Neovim says so
  end
  old:stop()
  -- A daemon that does not exit after `shutdown` is killed; then the next starts anyway.
  vim.defer_fn(function()
    if not started then
      old:stop(true)
      vim.defer_fn(start, 1000)
    end
  end, 5000)
end

---`fn()` once the daemon started has answered `initialize`: at once if it has; never if none runs or it exits first.
---@param fn fun()
function M.when_up(fn)
  local c = M.get()
  if c and c.initialized then
    return fn()
  elseif M.client_id then
    on_up[M.client_id] = on_up[M.client_id] or {}
    table.insert(on_up[M.client_id], fn)
  end
end

---Send a request; `cb(err, result)` runs on the main loop (err: M.GONE when its daemon died first).
---@param method string
---@param params table
---@param cb fun(err: table|nil, result: any)
---@return integer|nil request_id
function M.request(method, params, cb)
  if M.stopped() then
    M.ensure() -- a restart (on_retry): this waits for it
  end
  if M.client_id and not waiting and not M.get() then
    after_exit = after_exit or {}
  end
  if waiting or after_exit then
    table.insert(waiting or after_exit, function(err)
      if err then
        cb({ message = err, unsent = true }, nil)
      else
        M.request(method, params, cb)
      end
    end)
    return nil
  end
  local c, start_err = M.ensure()
  if not c then
    -- `unsent`: no daemon had it (a prompt goes back in the input).
    vim.schedule(function() cb({ message = start_err or "ollie-lsp is not running", unsent = true }, nil) end)
    return nil
  end
  owed[c.id] = owed[c.id] or {}
  local unanswered, key = owed[c.id], {}
  unanswered[key] = function(...) -- once: by the daemon, or by its exit
    if unanswered[key] then
      unanswered[key] = nil
      cb(...)
    end
  end
  local ok, rid
  if vim.fn.has("nvim-0.11") == 1 then
    ok, rid = c:request(method, params, unanswered[key])
  else
    ok, rid = c.request(method, params, unanswered[key])
  end
  if not ok then
    unanswered[key] = nil
    vim.schedule(function() cb({ message = method .. ": ollie-lsp is not running" }, nil) end)
    return nil
  end
  return rid
end

---Cancel a pending request (a running ollie/submit is interrupted).
---@param request_id integer
function M.cancel(request_id)
  local c = M.get()
  if c then
    if vim.fn.has("nvim-0.11") == 1 then
      c:cancel_request(request_id)
    else
      c.cancel_request(request_id)
    end
  end
end

---Attach the client to a file buffer (so the daemon sees its unsaved text and the file tools edit it).
---@param bufnr integer
function M.attach(bufnr)
  if not (M.client_id and vim.api.nvim_buf_is_loaded(bufnr)) then
    return
  end
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return
  end
  if not vim.lsp.buf_is_attached(bufnr, M.client_id) then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
end

return M
