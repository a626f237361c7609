-- Pickers through vim.ui.select: sessions (titles and relative times, never raw ids), models and agents;
-- rename and archive of a session; the yes-or-cancel questions (confirm).
local requests = require("ollie.requests")

local M = {}

---`text` broken at spaces into lines of at most `width` cells (a wider word stays whole), each after the first
---starting with `indent`; as it is when it fits.
---@param text string
---@param width integer
---@param indent string
---@return string
local function at_words(text, width, indent)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local lines = {}
  for word in text:gmatch("%S+") do
    local line = lines[#lines] and (lines[#lines] .. " " .. word)
    if line and vim.fn.strdisplaywidth(line) <= width then
      lines[#lines] = line
    else
      table.insert(lines, (#lines > 0 and indent or "") .. word)
    end
  end
  return table.concat(lines, "\n")
end

---Ask `prompt`, `yes_label` or Cancel (vim.ui.select, kind "ollie_confirm"): `yes()` on the one, `no()` otherwise.
---Neovim's own select (inputlist) wraps a line wider than the screen mid-word ("its messages g" / "o." at 60
---columns): with it the question and each choice break at words, a choice's further lines under its text, the
---question's indented (a session's title is whoever named it: a line of its words was never to read as a choice).
---@param prompt string
---@param yes_label string
---@param yes fun()
---@param no fun()|nil
function M.confirm(prompt, yes_label, yes, no)
  local stock, width = debug.getinfo(vim.ui.select, "S").source:find("vim/ui.lua", 1, true) ~= nil, vim.o.columns - 1
  vim.ui.select({ yes_label, "Cancel" }, {
    prompt = stock and at_words(prompt, width, "  ") or prompt,
    kind = "ollie_confirm",
    -- (After the "1: " the select puts first: its further lines under its text.)
    format_item = stock and function(item) return (at_words(item, width - 3, ""):gsub("\n", "\n   ")) end or nil,
  }, function(choice)
    if choice == yes_label then
      yes()
    elseif no then
      no()
    end
  end)
end

---Seconds since the epoch of an ISO 8601 time ("2026-11-30T22:05:01.123456+00:00", "...Z"); nil if not one.
---@param iso any
---@return integer|nil
function M.parse_iso(iso)
  if type(iso) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, s = iso:match("^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):(%d+)")
  if not y then
    return nil
  end
  local sign, oh, om = iso:match("([+-])(%d%d):?(%d%d)$")
  local offset = sign and (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == "-" and -1 or 1) or 0
  -- os.time reads the fields as local time: shift by the local zone's offset from UTC.
  local now = os.time()
  local local_offset = os.difftime(now, os.time(os.date("!*t", now) --[[@as osdateparam]]))
  local t = os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h),
    min = tonumber(mi), sec = tonumber(s), isdst = false })
  return math.floor(t + local_offset - offset)
end

---"just now", "5 min ago", "2 h ago", "yesterday", "3 days ago", else the date.
---@param iso any an ISO 8601 time
---@param now integer|nil seconds since the epoch (default: now)
---@return string
function M.ago(iso, now)
  return M.since(M.parse_iso(iso), now)
end

---As `ago`, for seconds since the epoch ("" for nil).
---@param t integer|nil
---@param now integer|nil
---@return string
function M.since(t, now)
  if not t then
    return ""
  end
  local d = math.max(0, (now or os.time()) - t)
  if d < 60 then
    return "just now"
  elseif d < 3600 then
    return math.floor(d / 60) .. " min ago"
  elseif d < 86400 then
    return math.floor(d / 3600) .. " h ago"
  elseif d < 2 * 86400 then
    return "yesterday"
  elseif d < 30 * 86400 then
    return math.floor(d / 86400) .. " days ago"
  end
  return os.date("!%Y-%m-%d", t) --[[@as string]]
end

-- How a last turn that did not end well ended (`lastTurnResult`): one more thing that tells sessions apart.
local ENDED = { error = "last turn failed", interrupted = "stopped", max_steps = "at the step limit",
  refusal = "refused", max_tokens = "cut short" }
-- The picker's width: a label wider wrapped (vim.ui.select's list at 80 columns, its "NN: " before it).
local LABEL_WIDTH = 74

---Another party's text (a teammate's title, a server's model id, an MCP server's error) as a picker draws it: a line
---break in it made a second, forged item of the list, a U+202E reversed the rest (permission.shown_path).
local function shown(text) return require("ollie.permission").shown_path(text) end

---The label of a session, within 80 columns: its title (or what it is), agent, when it was last active, and what tells
---sessions of one title apart (when it started, its turns, how its last turn ended).
---@param s table a session info (ollie/session/list)
---@param current string|nil the session the chat shows
---@return string
function M.session_label(s, current)
  -- A rewind of every turn untitles the session: listed while the rewind can be undone, which is what it is for.
  local untitled = s.rewindUndo == true and "(rewound: :OllieRewind undo puts it back)" or "(no prompt yet)"
  local title = (type(s.title) == "string" and s.title ~= "") and shown(s.title) or untitled
  local parts = {}
  if s.agent and s.agent ~= "default" then
    table.insert(parts, s.agent)
  end
  -- Shared to a team channel (docs/TEAM.md): whose it is and which team.
  if type(s.team) == "string" and s.team ~= "" then
    table.insert(parts, "team " .. s.team .. " · " .. (type(s.owner) == "string" and s.owner or "?"))
  end
  local when, started = M.ago(s.lastActive ~= vim.NIL and s.lastActive or s.createdAt), M.ago(s.createdAt)
  if when ~= "" then
    table.insert(parts, when)
  end
  if started ~= "" and started ~= when then
    table.insert(parts, "started " .. started)
  end
  -- As the terminal's /sessions: two of one title made in one minute differ by it.
  if type(s.turns) == "number" then
    table.insert(parts, s.turns .. (s.turns == 1 and " turn" or " turns"))
  end
  if ENDED[s.lastTurnResult] then
    table.insert(parts, ENDED[s.lastTurnResult])
  end
  -- Another daemon sharing the store runs it (docs/TEAM.md): loading it would be refused (-32007).
  if type(s.liveOn) == "string" and s.liveOn ~= "" then
    table.insert(parts, "live on " .. s.liveOn)
  end
  local mark = s.id == current and " (current)" or s.archived and " (archived)" or ""
  local rest = shown(table.concat(vim.list_extend({ "" }, parts), " · ")) .. mark
  local room = math.max(24, LABEL_WIDTH - vim.fn.strdisplaywidth(rest)) -- a title cut shorter says nothing
  if vim.fn.strdisplaywidth(title) > room then
    title = vim.fn.strcharpart(title, 0, room - 1) .. "…"
  end
  return title .. rest
end

---The saved sessions' infos, page after page by the daemon's `nextCursor` until none follows or 1,000 are listed
---(a cursor, unlike an offset, shows no session twice when one is added between pages).
---@param params table ollie/session/list's filters
---@param on_sessions fun(sessions: table[])
local function list_sessions(params, on_sessions)
  local sessions, seen = {}, {}
  local function page(cursor)
    requests.call("ollie/session/list", vim.tbl_extend("force", params, { limit = 100, cursor = cursor }), function(res)
      vim.list_extend(sessions, type(res.sessions) == "table" and res.sessions or {})
      local next_cursor = res.nextCursor
      if type(next_cursor) == "string" and not seen[next_cursor] and #sessions < 1000 then -- never the same page again
        seen[next_cursor] = true
        return page(next_cursor)
      end
      on_sessions(vim.list_slice(sessions, 1, 1000))
    end)
  end
  page(nil)
end

-- The picker's last entry: the archived sessions (the daemon lists them only when asked).
local SHOW_ARCHIVED = { show_archived = true }

---Pick an archived session; once the user confirms, unarchive it and `on_choice(info)` (nil: dismissed).
---@param on_choice fun(info: table|nil)
function M.archived(on_choice)
  list_sessions({ includeArchived = true }, function(listed)
    local sessions = vim.tbl_filter(function(s) return s.archived == true end, listed)
    if #sessions == 0 then
      requests.notify("no archived sessions")
      return on_choice(nil)
    end
    vim.ui.select(sessions, {
      prompt = "ollie: archived sessions",
      kind = "ollie_session",
      format_item = function(s) return M.session_label(s) end,
    }, function(s)
      if not s then
        return on_choice(nil)
      end
      M.confirm("“" .. M.session_label(s) .. "”", "Unarchive and resume", function()
        requests.call("ollie/session/unarchive", { session = s.id }, function()
          on_choice(vim.tbl_extend("force", s, { archived = false }))
        end)
      end, function() on_choice(nil) end)
    end)
  end)
end

---Pick a saved session; `on_choice(info)` with the session info (nil: dismissed). The daemon leaves out the
---sessions nobody typed in (each daemon start makes one).
---@param on_choice fun(info: table|nil)
---@param opts {prompt: string|nil, include_archived: boolean|nil, offer_archived: boolean|nil}|nil
---`offer_archived`: a last entry "Show archived…" lists the archived sessions, to unarchive and resume one
function M.sessions(on_choice, opts)
  opts = opts or {}
  list_sessions({ includeArchived = opts.include_archived or nil }, function(sessions)
    local current = requests.session()
    if opts.offer_archived then
      table.insert(sessions, SHOW_ARCHIVED)
    elseif #sessions == 0 then
      requests.notify("no saved sessions yet")
      return on_choice(nil)
    end
    vim.ui.select(sessions, {
      prompt = opts.prompt or "ollie: sessions",
      kind = "ollie_session",
      format_item = function(s) return s == SHOW_ARCHIVED and "Show archived…" or M.session_label(s, current) end,
    }, function(s)
      if s == SHOW_ARCHIVED then
        return M.archived(on_choice)
      end
      on_choice(s)
    end)
  end)
end

---`on_choice` given nil for the current one picked: picking it again switches nothing (`/agent` to the same agent
---cleared the session all the same).
---@param current string|nil
---@param on_choice fun(name: string|nil)
---@return fun(name: string|nil)
function M.changed(current, on_choice)
  return function(name) on_choice(name ~= current and name or nil) end
end

---Pick a model of the session's backend (`ollie/listModels`); `on_choice(name)`.
---@param on_choice fun(name: string|nil)
function M.models(on_choice)
  requests.call("ollie/listModels", {}, function(res)
    if res.error and res.error ~= "" then
      requests.notify(res.error, vim.log.levels.WARN)
    end
    if #(res.models or {}) == 0 then
      return on_choice(nil)
    end
    vim.ui.select(res.models, {
      prompt = "ollie: model of " .. tostring(res.server or res.backend), -- a local server by its host, not "local"
      kind = "ollie_model",
      format_item = function(name) -- the server's id, shown escaped; the id itself goes back
        return name == res.current and (shown(name) .. " (current)") or shown(name)
      end,
    }, M.changed(res.current, on_choice))
  end)
end

---Pick an agent config (`ollie/listAgents`); `on_choice(name)`. One that cannot load says why.
---@param on_choice fun(name: string|nil)
function M.agents(on_choice)
  requests.call("ollie/listAgents", {}, function(res)
    local by_name, names = {}, {}
    for _, a in ipairs(res.agents or {}) do
      by_name[a.name] = a
      table.insert(names, a.name)
    end
    vim.ui.select(names, {
      prompt = "ollie: agent (another starts a new conversation; this one is kept in :OllieSessions)",
      kind = "ollie_agent",
      format_item = function(name)
        local a = by_name[name]
        local about = (a.error or "") ~= "" and ("cannot load: " .. a.error) or (a.description or "")
        local label = shown(about ~= "" and (name .. " — " .. about) or name)
        return name == res.current and (label .. " (current)") or label
      end,
    }, M.changed(res.current, on_choice))
  end)
end

-- The names :OllieModel and :OllieAgent complete: the daemon's last list, asked again at each <Tab> (a command line's
-- completion cannot wait for an answer). Before the first answer, the <Tab> is pressed again once it comes.
M.listed = { model = {}, agent = {} }

---Completion of :OllieModel and :OllieAgent (`kind`): the names starting with `lead`.
---@param kind "model"|"agent"
---@param lead string
---@return string[]
function M.complete(kind, lead)
  local line, first = vim.fn.getcmdline(), #M.listed[kind] == 0
  requests.call(kind == "model" and "ollie/listModels" or "ollie/listAgents", {}, function(res)
    local agents = vim.tbl_map(function(a) return a.name end, res.agents or {})
    M.listed[kind] = kind == "model" and (res.models or {}) or agents
    if first and #M.listed[kind] > 0 then
      M.tab_again(line)
    end
  end, function() end)
  return vim.tbl_filter(function(name) return type(name) == "string" and vim.startswith(name, lead) end, M.listed[kind])
end

---Press <Tab> (the 'wildchar') again for the user, whose first one came before the names it completes, if the
---command line is still `line`.
---@param line string
function M.tab_again(line)
  if vim.fn.getcmdtype() == ":" and vim.fn.getcmdline() == line then
    vim.api.nvim_input(vim.fn.nr2char(vim.o.wildchar))
  end
end

---The session's MCP servers (`ollie/mcp/list`): each with its state (why it failed); picking one lists its tools.
function M.mcp()
  requests.call("ollie/mcp/list", {}, function(res)
    local servers = res.servers or {}
    if #servers == 0 then
      -- Where, as the daemon (this editor's environment) finds it: "in ollie's config directory" was cut off at 80
      -- columns, and said nowhere which that is.
      local dir = vim.env.OLLIE_CONFIG_DIR or vim.fs.joinpath(vim.env.XDG_CONFIG_HOME or "~/.config", "ollie")
      requests.notify("no MCP servers: add them to " .. vim.fs.joinpath(dir, "mcp.json"))
      return
    end
    vim.ui.select(servers, {
      prompt = "ollie: MCP servers",
      kind = "ollie_mcp",
      format_item = function(s)
        local state = s.state == "ready" and ("ready, " .. #(s.tools or {}) .. " tools")
          or ((s.error or "") ~= "" and (s.state .. ": " .. s.error) or s.state)
        return shown(s.name .. " — " .. state)
      end,
    }, function(s)
      if not s then return end
      local lines = {}
      for _, t in ipairs(s.tools or {}) do
        table.insert(lines, t.name .. " [" .. t.kind .. "]")
      end
      for _, p in ipairs(s.prompts or {}) do
        table.insert(lines, "/mcp:" .. s.name .. ":" .. p.name)
      end
      for _, r in ipairs(s.resources or {}) do
        table.insert(lines, "#mcp:" .. s.name .. ":" .. r.uri)
      end
      requests.notify(shown(s.name .. ": " .. (#lines > 0 and table.concat(lines, ", ") or "no tools")))
    end)
  end)
end

local function rename_to(id, title)
  requests.call("ollie/session/rename", { session = id, title = title }, function()
    requests.notify("renamed to " .. title)
  end)
end

---Rename a session: with `title`, the current one; else pick one, then type its title.
---@param title string|nil
function M.rename(title)
  if title and title ~= "" then
    requests.call("ollie/state", {}, function(state) rename_to(state.session, title) end)
    return
  end
  M.sessions(function(s)
    if not s then
      return
    end
    -- The old title is said, not typed in: as `default` it sat in the input, and what the user typed joined it.
    -- Escaped: a teammate's (shared) line break drew lines of its own under the prompt.
    local old = (type(s.title) == "string" and s.title ~= "") and (" “" .. shown(s.title) .. "”") or ""
    vim.ui.input({ prompt = "Rename" .. old .. " to: " }, function(text)
      if text and vim.trim(text) ~= "" then
        rename_to(s.id, vim.trim(text))
      end
    end)
  end, { prompt = "ollie: rename which session?" })
end

---Pick a session and archive it after confirmation (archived sessions leave the list; nothing is deleted).
function M.archive()
  M.sessions(function(s)
    if not s then
      return
    end
    local label = M.session_label(s)
    M.confirm("Archive “" .. label .. "”?", "Archive", function()
      requests.call("ollie/session/archive", { session = s.id }, function()
        requests.notify("archived " .. label)
      end)
    end)
  end, { prompt = "ollie: archive which session?" })
end

return M
