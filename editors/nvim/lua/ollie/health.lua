-- :checkhealth ollie: Neovim, the daemon (found, starts, its version) and the backend it would use
-- (reachable, model present, key set: `ollie/state`'s backendStatus), each problem with its fix.
local M = {}

-- The longest :checkhealth waits for the daemon (start-up, engine load, the backend's ~3 s model check).
M.timeout_ms = 20000

local INSTALL = "install it with `pipx install ollie-agent` (or `uv tool install ollie-agent`), "
  .. "or set require('ollie').setup({ cmd = { ... } })"

---What a daemon answers: its version and the backend status of its default session.
---@class ollie.Probe
---@field version string|nil
---@field protocol integer|nil
---@field backend table|nil backendStatus
---@field err string|nil

---Ask the running client for the daemon's version and backendStatus; `cb(probe)`.
local function ask_running(client, cb)
  local info = client.server_info or {}
  local ollie = vim.tbl_get(client.server_capabilities or {}, "experimental", "ollie") or {}
  local session = require("ollie.requests").session()
  require("ollie.client").request("ollie/state", session and { session = session } or vim.empty_dict(),
    function(err, state)
      cb({ version = info.version, protocol = ollie.version, backend = state and state.backendStatus,
        err = err and require("ollie.requests").err_text(err) })
    end)
end

---Start a short-lived daemon (the configured command and options), ask it, shut it down; `cb(probe)`.
local function ask_new(cmd, cb)
  local config = require("ollie.config")
  local done = false
  local finish = function(probe)
    if not done then
      done = true
      cb(probe)
    end
  end
  local ok, rpc = pcall(vim.lsp.rpc.start, cmd, {
    on_exit = function(code)
      finish({ err = "the daemon exited (code " .. tostring(code) .. ") before it answered" })
    end,
  }, { cwd = vim.fn.getcwd() })
  if not ok or not rpc then
    finish({ err = "cannot run " .. table.concat(cmd, " ") .. ": " .. tostring(rpc) })
    return nil
  end
  local root = vim.uri_from_fname(vim.fn.getcwd())
  rpc.request("initialize", {
    processId = vim.fn.getpid(), rootUri = root, capabilities = vim.empty_dict(),
    initializationOptions = config.init_options(),
  }, function(err, init)
    if err or not init then
      finish({ err = "initialize failed: " .. vim.inspect(err) })
      return
    end
    rpc.notify("initialized", vim.empty_dict())
    local info = init.serverInfo or {}
    local protocol = vim.tbl_get(init, "capabilities", "experimental", "ollie", "version")
    rpc.request("ollie/state", vim.empty_dict(), function(serr, state)
      finish({ version = info.version, protocol = protocol, backend = state and state.backendStatus,
        err = serr and vim.inspect(serr) or nil })
      rpc.request("shutdown", nil, function()
        rpc.notify("exit", nil)
      end)
    end)
  end)
  return rpc
end

---Report the backend from a backendStatus: each problem an error with its fix.
local function report_backend(s)
  local h = vim.health
  s.error = type(s.error) == "string" and s.error or ""
  s.hint = type(s.hint) == "string" and s.hint or ""
  -- "none": no backend could be made (no key, an unknown name), and so no model: its error says which.
  local which = s.backend == "none" and "" or string.format(" %s, model %s", tostring(s.backend), tostring(s.model))
  if s.ok then
    h.ok("backend" .. which .. ": reachable" .. (s.modelPresent == true and ", model present" or ""))
    return
  end
  local fix = s.hint ~= "" and { s.hint, require("ollie.backend").settings_file(s.settingsFile) } or nil
  if s.keySet == false then
    h.error("backend" .. which .. ": no API key is set (" .. s.error .. ")", fix)
  elseif s.reachable == false then
    h.error("backend" .. which .. ": not reachable: " .. s.error, fix)
  elseif s.backend == "none" then
    h.error("backend: cannot be set up: " .. s.error, fix)
  elseif s.modelPresent == false then
    h.error("backend" .. which .. ": the model is not there: " .. s.error, fix)
  else
    h.error("backend" .. which .. ": " .. (s.error ~= "" and s.error or "cannot take a turn"), fix)
  end
  if s.reachable == true then
    h.ok("the backend answers")
  end
end

---`ollie doctor` next to the daemon command (`ollie-lsp` → `ollie doctor`, `-m ollie_lsp` → `-m ollie.cli
---doctor`, also behind ssh); nil when the command has neither form.
---@param cmd string[]
---@return string[]|nil
function M.doctor_cmd(cmd)
  local out = {}
  for i, part in ipairs(cmd) do
    if vim.fs.basename(part) == "ollie-lsp" then
      table.insert(out, part:sub(1, #part - #"ollie-lsp") .. "ollie")
      break
    elseif part == "ollie_lsp" and cmd[i - 1] == "-m" then
      table.insert(out, "ollie.cli")
      break
    end
    table.insert(out, part)
    if i == #cmd then
      return nil
    end
  end
  table.insert(out, "doctor")
  local o = require("ollie.config").options
  for _, key in ipairs({ "backend", "model" }) do
    if o[key] then
      vim.list_extend(out, { "--" .. key, o[key] })
    end
  end
  return out
end

---`ollie doctor`'s lines as checks: {ok, name, detail, fix}.
---@param stdout string
---@return {ok: boolean, name: string, detail: string, fix: string}[]
function M.parse_doctor(stdout)
  local checks = {}
  for _, line in ipairs(vim.split(stdout, "\n", { trimempty = true })) do
    local mark, name, rest = line:match("^(%S+)%s+([^:]+): (.*)$")
    if mark == "ok" or mark == "FAIL" then
      local detail, fix = rest:match("^(.-) %-> (.*)$")
      table.insert(checks, { ok = mark == "ok", name = name, detail = detail or rest, fix = fix or "" })
    end
  end
  return checks
end

local BACKEND_CHECKS = { key = true, backend = true, model = true, ["settings file"] = true }

---Report `ollie doctor`'s checks: those about the backend (`backend`) or the rest.
local function report_doctor(checks, backend)
  local file
  for _, c in ipairs(checks) do
    file = c.name == "settings file" and c.detail or file
  end
  for _, c in ipairs(checks) do
    -- The editor found its daemon its own way (checked above): doctor's PATH check says nothing here.
    if BACKEND_CHECKS[c.name] == backend and c.name ~= "ollie-lsp" then
      if c.ok then
        vim.health.ok(c.name .. ": " .. c.detail)
      else
        local settings = backend and require("ollie.backend").settings_file(file) or nil -- where its fix's go
        vim.health.error(c.name .. ": " .. c.detail, c.fix ~= "" and { c.fix, settings } or nil)
      end
    end
  end
end

---Run `cmd` without blocking; `cb(result)` (vim.SystemCompleted, or code -1 when it cannot start).
local function run(cmd, cb)
  local ok, err = pcall(vim.system, cmd, { text = true, timeout = M.timeout_ms }, vim.schedule_wrap(cb))
  if not ok then
    cb({ code = -1, stdout = "", stderr = tostring(err) })
  end
end

---The :checkhealth entry point.
function M.check()
  local h = vim.health
  h.start("ollie: editor")
  if vim.fn.has("nvim-0.10") == 1 then
    h.ok("Neovim " .. tostring(vim.version()))
  else
    h.error("Neovim >= 0.10 is required", { "upgrade Neovim" })
  end

  h.start("ollie: daemon")
  local cmd, err = require("ollie.config").server_cmd()
  if not cmd then
    h.error(err or "ollie-lsp not found", not err and { INSTALL } or nil) -- (err says its fix: not twice)
    return
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    h.error("daemon command `" .. cmd[1] .. "` is not executable", { INSTALL })
    return
  end
  h.ok("daemon command: " .. table.concat(cmd, " "))
  -- Everything runs at once, without blocking: `--version`, `ollie doctor`, and the running daemon's
  -- backendStatus (or, when doctor cannot be found, a short-lived daemon's).
  local version, doctor, probe, started
  run(vim.list_extend(vim.deepcopy(cmd), { "--version" }), function(r) version = r end)
  local doctor_cmd = M.doctor_cmd(cmd)
  if doctor_cmd then
    run(doctor_cmd, function(r) doctor = r end)
  else
    doctor = { code = -1, stdout = "", stderr = "" }
  end
  local client = require("ollie.client").get()
  if client then
    ask_running(client, function(p) probe = p end)
  end
  -- :checkhealth builds its report synchronously: this is the one place that waits (bounded; the event
  -- loop keeps running, so the processes and the daemon answer meanwhile).
  vim.wait(M.timeout_ms, function() return version and doctor and (probe or not client) end, 50)
  local checks = doctor and M.parse_doctor(doctor.stdout or "") or {}
  if not client and #checks == 0 then
    started = ask_new(cmd, function(p) probe = p end)
    vim.wait(M.timeout_ms, function() return probe ~= nil end, 50)
    if started and not started.is_closing() then
      vim.defer_fn(function() started.terminate() end, 2000)
    end
  end

  if version and version.code == 0 then
    local running = client and string.format(" is running (protocol v%s)",
      tostring(vim.tbl_get(client.server_capabilities or {}, "experimental", "ollie", "version") or "?")) or " starts"
    h.ok(vim.trim(version.stdout or "") .. running)
  else
    h.error("the daemon does not start: `" .. table.concat(cmd, " ") .. " --version` "
      .. (version and ("failed: " .. vim.trim((version.stderr or "") .. (version.stdout or ""))) or "timed out"),
      { INSTALL })
  end

  h.start("ollie: backend")
  if probe and probe.backend and probe.backend ~= vim.NIL then
    report_backend(probe.backend)
  elseif #checks > 0 then
    report_doctor(checks, true)
  else
    h.error("could not check the backend: " .. tostring(probe and probe.err or "`ollie doctor` did not answer"),
      { "run `ollie doctor` in a terminal" })
  end
  if #checks > 0 then
    h.start("ollie: sandbox and sessions")
    report_doctor(checks, nil)
  end
end

return M
