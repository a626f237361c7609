-- ollie.nvim: a thin client of ollie-lsp. The daemon does the work; this makes it feel native.
local config = require("ollie.config")
local client = require("ollie.client")
local chat = require("ollie.chat")

local M = {}

---@class ollie.State
---@field session string|nil  the session this editor shows (nil: the daemon's default session)
---@field running boolean
---@field state string
---@field cost number
M.status = { session = nil, running = false, state = "idle", cost = 0 }

local function notify(msg, level)
  vim.notify("ollie: " .. msg, level or vim.log.levels.INFO)
end

local function err_text(err)
  return type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)
end

local function on_event(ev)
  if M.status.session and ev.session ~= M.status.session then
    return
  end
  M.status.session = M.status.session or ev.session
  chat.on_event(ev)
  if ev.role == "tool" and config.options.reload_changed then
    vim.schedule(function() vim.cmd("silent! checktime") end)
  end
end

local function on_state(p)
  if M.status.session and p.session ~= M.status.session then
    return
  end
  M.status.running = p.running
  M.status.state = p.state or M.status.state
  if type(p.cost) == "table" then
    M.status.cost = p.cost.session or M.status.cost
  end
  vim.cmd("redrawstatus")
end

---Configure ollie.nvim (optional: defaults work).
---@param opts ollie.Config|nil
function M.setup(opts)
  config.set(opts)
  if config.options.attach_buffers then
    vim.api.nvim_create_autocmd("BufEnter", {
      group = vim.api.nvim_create_augroup("ollie_attach", { clear = true }),
      callback = function(a)
        if client.get() and vim.bo[a.buf].buftype == "" and vim.api.nvim_buf_get_name(a.buf) ~= "" then
          client.attach(a.buf)
        end
      end,
    })
  end
end

---Show the chat and start the daemon if needed; false (after telling the user) when it can't.
---@param focus boolean|nil move the cursor into the chat window
local function ensure(focus)
  local buf = chat.open(focus)
  local c, err = client.ensure(buf)
  if not c then
    notify(err or "cannot start ollie-lsp", vim.log.levels.ERROR)
    return false
  end
  client.listeners["ollie/event"] = on_event
  client.listeners["ollie/stateChanged"] = on_state
  return true
end

---Request params for the current session (an empty table must still encode as a JSON object).
local function params(extra)
  local p = vim.tbl_extend("force", { session = M.status.session }, extra or {})
  return next(p) == nil and vim.empty_dict() or p
end

---Editor context for a line range of the current buffer.
---@param range {line1: integer, line2: integer}
function M.range_context(range)
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, range.line1 - 1, range.line2, false)
  return {
    uri = vim.uri_from_bufnr(buf),
    range = { start = { line = range.line1 - 1, character = 0 }, ["end"] = { line = range.line2, character = 0 } },
    selection = table.concat(lines, "\n"),
    languageId = vim.bo[buf].filetype,
  }
end

---Send a prompt (or a slash command) to the current session.
---@param text string
---@param range {line1: integer, line2: integer}|nil the lines to send as context
function M.ask(text, range)
  if vim.trim(text or "") == "" then
    M.open_chat()
    return
  end
  local context = range and M.range_context(range) or nil
  if not ensure() then
    return
  end
  if context then
    client.attach(vim.uri_to_bufnr(context.uri))
  end
  chat.begin_turn(text)
  client.request("ollie/submit", params({ text = text, context = context }), function(err, result)
    if err then
      chat.on_event({ role = "error", content = err_text(err) })
      chat.on_event({ role = "turn", content = "error" })
      return
    end
    M.status.session = result.session
    if result.stop == "command" and result.reply and result.reply ~= "" then
      chat.on_event({ role = "info", content = result.reply })
      chat.on_event({ role = "turn", content = "command" })
    end
  end)
end

---Send what is typed at the end of the chat buffer (queued when a turn is running).
function M.send_input()
  local _, text = chat.input()
  if text == "" then
    return
  end
  if M.status.running and not text:match("^/") then
    M.queue(text)
    local header = chat.input()
    vim.api.nvim_buf_set_lines(chat.bufnr, header + 1, -1, false, { "" })
    return
  end
  M.ask(text)
end

---Open the chat buffer and go there (starting the daemon).
function M.open_chat()
  ensure(true)
end

---Interrupt the running turn.
function M.stop()
  if not client.get() then
    return
  end
  client.request("ollie/interrupt", params({ reason = "user" }), function(err)
    if err then notify(err_text(err), vim.log.levels.WARN) end
  end)
end

---Add text to the running turn's next tool result.
function M.inject(text)
  if ensure() then
    client.request("ollie/inject", params({ text = text }), function(err)
      if err then notify(err_text(err), vim.log.levels.WARN) else notify("injected") end
    end)
  end
end

---Queue a prompt to run after the current turn.
function M.queue(text)
  if ensure() then
    client.request("ollie/queue", params({ text = text }), function(err, res)
      if err then notify(err_text(err), vim.log.levels.WARN) else notify("queued (" .. res.depth .. " waiting)") end
    end)
  end
end

---Run one slash command and show its output.
local function command(line, cb)
  if not ensure() then
    return
  end
  client.request("ollie/command", params({ line = line }), function(err, res)
    if err then
      notify(err_text(err), vim.log.levels.WARN)
    elseif cb then
      cb(res.output or "")
    else
      chat.on_event({ role = "info", content = res.output or "" })
    end
  end)
end

local function switch_to(session)
  M.status.session = session
  local res, err = client.request_sync("ollie/context", params(), 10000)
  if err then
    notify(err_text(err), vim.log.levels.WARN)
    return
  end
  chat.render_history(res.messages)
end

---Start a new session and show it.
function M.new_session()
  if not ensure() then
    return
  end
  client.request("ollie/session/new", vim.empty_dict(), function(err, res)
    if err then
      notify(err_text(err), vim.log.levels.WARN)
      return
    end
    switch_to(res.session)
    notify("new session " .. res.session)
  end)
end

---Pick a saved session with vim.ui.select and switch to it.
function M.pick_session()
  if not ensure() then
    return
  end
  local res, err = client.request_sync("ollie/session/list", { limit = 50 }, 10000)
  if err or not res then
    notify(err_text(err), vim.log.levels.WARN)
    return
  end
  vim.ui.select(res.sessions, {
    prompt = "ollie session",
    format_item = function(s)
      return string.format("%s  %s", s.title ~= "" and s.title or s.id, s.lastActive or "")
    end,
  }, function(choice)
    if not choice then
      return
    end
    local _, lerr = client.request_sync("ollie/session/load", { session = choice.id }, 10000)
    if lerr then
      notify(err_text(lerr), vim.log.levels.WARN)
      return
    end
    switch_to(choice.id)
  end)
end

-- The pickers' lists come from the daemon as data: ollie/listModels and ollie/listAgents.
local LISTS = { model = "ollie/listModels", agent = "ollie/listAgents" }

---Choices of a listModels/listAgents result: names, and the label each shows.
local function choices(kind, res)
  local names, labels = {}, {}
  if kind == "model" then
    for _, name in ipairs(res.models or {}) do
      table.insert(names, name)
      labels[name] = name
    end
  else
    for _, agent in ipairs(res.agents or {}) do
      local about = agent.error ~= "" and ("cannot load: " .. agent.error) or agent.description
      table.insert(names, agent.name)
      labels[agent.name] = about ~= "" and (agent.name .. " — " .. about) or agent.name
    end
  end
  if res.current and labels[res.current] then
    labels[res.current] = labels[res.current] .. " (current)"
  end
  return names, labels
end

local function show_or_pick(kind, name)
  if name and name ~= "" then
    command("/" .. kind .. " " .. name)
    return
  end
  if not ensure() then
    return
  end
  client.request(LISTS[kind], params(), function(err, res)
    if err then
      notify(err_text(err), vim.log.levels.WARN)
      return
    end
    if res.error and res.error ~= "" then
      notify(res.error, vim.log.levels.WARN)
    end
    local names, labels = choices(kind, res)
    vim.ui.select(names, {
      prompt = "ollie " .. kind,
      format_item = function(item)
        return labels[item]
      end,
    }, function(choice)
      if choice then
        command("/" .. kind .. " " .. choice)
      end
    end)
  end)
end

---Show or switch the model (no name: pick from the backend's list).
function M.model(name)
  show_or_pick("model", name)
end

---Show or switch the agent (no name: pick from the agent configs).
function M.agent(name)
  show_or_pick("agent", name)
end

---Compact the session's context.
function M.compact()
  command("/compact")
end

---A statusline component: "ollie: <state> $<cost>".
function M.statusline()
  if not client.get() then
    return ""
  end
  return string.format("ollie: %s $%.4f", M.status.state, M.status.cost or 0)
end

return M
