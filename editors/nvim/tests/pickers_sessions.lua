-- Pickers: sessions by title with relative times (never ids), rename and archive; models and agents.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local pickers = require("ollie.pickers")

local notified = U.notified

local now = pickers.parse_iso("2026-11-30T22:05:00Z")
H.results.ago = {
  pickers.ago("2026-11-30T22:04:30.123456+00:00", now), pickers.ago("2026-11-30T21:55:00+00:00", now),
  pickers.ago("2026-11-30T20:00:00+00:00", now), pickers.ago("2026-11-29T20:00:00Z", now),
  pickers.ago("2026-11-25T22:05:00+01:00", now), pickers.ago("2026-09-01T00:00:00Z", now), pickers.ago(vim.NIL, now),
}

-- Sessions of one title (a new user's "fix the failing test", thrice): what else tells them apart, within 80 columns.
local function iso(ago) return os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - ago) end
local fix = "fix the failing test"
H.results.same_title = {
  pickers.session_label({ id = "a", title = fix, createdAt = iso(300), lastActive = iso(300), lastTurnResult = "end" }),
  pickers.session_label({ id = "b", title = fix, createdAt = iso(3 * 86400), lastActive = iso(400),
    lastTurnResult = "error" }),
  pickers.session_label({ id = "c", title = fix .. " in tests/test_parser.py and then the ones in tests/test_lexer.py",
    createdAt = iso(3 * 86400), lastActive = iso(7200), lastTurnResult = "interrupted" }, "c"),
}
-- A teammate's shared session: its title, owner and agent are hers.
H.results.shared_label = pickers.session_label({ id = "d", title = "fix\n2: Approve \226\128\174on",
  agent = "a\nb", team = "eng", owner = "alice\226\128\174", createdAt = iso(300), lastActive = iso(300) })
-- :OllieRename on it: the prompt names her title (it drew her line break as a line of its own, "2: Approve ...").
local sessions, input = pickers.sessions, vim.ui.input
pickers.sessions = function(on_pick) on_pick({ id = "d", title = "fix\n2: Approve \226\128\174on" }) end
vim.ui.input = function(opts) H.results.shared_rename = opts.prompt end
pickers.rename()
pickers.sessions, vim.ui.input = sessions, input

U.call("ollie/submit", { text = "explain the mul function please" })
-- A session nobody prompted (each daemon start makes one): the daemon leaves it out of its list.
local untouched = U.call("ollie/session/new", {}).session
H.results.untouched_listed = vim.tbl_contains(vim.tbl_map(function(s) return s.id end,
  U.call("ollie/session/list", {}).sessions), untouched)

local picked = false
U.answer_select(function() return false end)
pickers.sessions(function() picked = true end)
U.wait(function() return picked end, "the sessions picker")
H.results.session_labels = H.results.selects[1].labels
H.results.session_prompt = H.results.selects[1].prompt

-- :OllieRename: pick the session, type its new title.
U.answer_select(function(_, label) return label:find("explain the mul", 1, true) ~= nil end)
vim.ui.input = function(opts, on_confirm)
  H.results.rename_input = { prompt = opts.prompt, default = opts.default }
  on_confirm("Mul review")
end
vim.cmd("OllieRename")
U.wait(function() return notified("renamed to Mul review") end, "the rename")

picked = false
U.answer_select(function() return false end)
pickers.sessions(function() picked = true end)
U.wait(function() return picked end, "the sessions picker after the rename")
H.results.labels_after_rename = H.results.selects[1].labels

local model, agent
U.answer_select(function(item) return item == "other-model" or item == "coding" end)
pickers.models(function(name) model = name end)
U.wait(function() return model end, "the model picker")
H.results.model_select = H.results.selects[1]
H.results.model = model
U.answer_select(function(item) return item == "coding" end)
pickers.agents(function(name) agent = name end)
U.wait(function() return agent end, "the agent picker")
H.results.agent_select = H.results.selects[1]

-- :OllieArchive: pick, confirm; the session leaves the list.
U.answer_select(function(item, label) return label:find("Mul review", 1, true) ~= nil or item == "Archive" end)
vim.cmd("OllieArchive")
U.wait(function() return notified("archived Mul review") end, "the archive")
H.results.archive_selects = H.results.selects
local listed = U.call("ollie/session/list", {})
H.results.titles_after_archive = vim.tbl_map(function(s) return s.title end, listed.sessions)

-- :OllieSessions offers the archived sessions ("Show archived…"); one picked there is unarchived and resumed.
local ollie = require("ollie")
local mul = vim.tbl_filter(function(s) return s.title == "Mul review" end,
  U.call("ollie/session/list", { includeArchived = true }).sessions)[1]
U.answer_select(function(item, label)
  return label == "Show archived…" or label:find("Mul review", 1, true) ~= nil or item == "Unarchive and resume"
end)
-- (The chat, made by :OllieSessions, shows the daemon's default session at once: Mul review's. Its load, which comes
-- after the unarchive, says it was resumed.)
local client = require("ollie.client")
local real_request, loaded = client.request, false
client.request = function(method, params, cb)
  if method == "ollie/session/load" and params.session == mul.id then
    return real_request(method, params, function(...)
      loaded = true
      return cb(...)
    end)
  end
  return real_request(method, params, cb)
end
vim.cmd("OllieSessions")
U.wait(function() return loaded and ollie.current_session() == mul.id end, "the unarchived session resumed")
client.request = real_request
H.results.unarchive_selects = H.results.selects
H.results.archived_before = mul.archived
listed = U.call("ollie/session/list", {})
H.results.titles_after_unarchive = vim.tbl_map(function(s) return s.title end, listed.sessions)

-- Teams (docs/TEAM.md): the daemon's answers stand in for a second daemon on a shared store, as the
-- protocol's error table words them. A session live elsewhere is labelled; loading it is refused (-32007),
-- said on one line, and the chat stays where it was; a rename/archive refused (-32008) is said the same way.
local requests = require("ollie.requests")
local unarchived = ollie.current_session()
ollie.new_session()
-- The chat on its new session and drawn (the unarchived one it showed was its session until then).
U.wait(function()
  local c = ollie.current()
  return c ~= nil and c.session ~= unarchived and c.redrawing == nil
end, "the chat on its new session")
local here = ollie.current_session()
local LIVE = "session is live elsewhere: session s-team1 is live on buildbox (pid 4242, user ana) since "
  .. "2026-11-30T22:00:00+00:00: it can be loaded once that daemon closes it, or its lease lapses"
local FORBIDDEN = "forbidden: session s-team1 is shared with team 'core' to read and resume: only its owner (ana) "
  .. "may rename, archive or share it"
local sent = {}
client.request = function(method, params, cb)
  table.insert(sent, method)
  local answers = {
    ["ollie/session/list"] = { nil, { sessions = {
      { id = "s-team1", agent = "default", title = "fix the flaky login test", createdAt = "2026-11-30T21:00:00Z",
        lastActive = vim.NIL, archived = false, live = false, liveOn = "buildbox (pid 4242)", owner = "ana",
        team = "core" },
      { id = "s-mine", agent = "default", title = "mine", createdAt = "2026-11-30T21:00:00Z", lastActive = vim.NIL,
        archived = false, live = false, liveOn = vim.NIL },
    } } },
    ["ollie/session/load"] = { { code = -32007, message = LIVE, data = { session = "s-team1" } } },
    ["ollie/session/rename"] = { { code = -32008, message = FORBIDDEN, data = { session = "s-team1" } } },
    ["ollie/session/archive"] = { { code = -32008, message = FORBIDDEN, data = { session = "s-team1" } } },
  }
  local a = answers[method]
  if not a then
    return real_request(method, params, cb)
  end
  vim.schedule(function() cb(a[1], a[2]) end)
  return 1
end
U.answer_select(function(item) return type(item) == "table" and item.id == "s-team1" end)
vim.cmd("OllieSessions")
U.wait(function() return notified("session is live elsewhere") end, "the -32007 refusal")
H.results.team_labels = H.results.selects[1].labels
H.results.live_refusal = notified("session is live elsewhere")
H.results.session_kept = ollie.current_session() == here
vim.o.columns = 80
H.results.live_one_line = requests.one_line(H.results.live_refusal.msg)
H.results.echospace = vim.v.echospace

U.answer_select(function(item) return type(item) == "table" and item.id == "s-team1" end)
vim.ui.input = function(_, on_confirm) on_confirm("Renamed") end
vim.cmd("OllieRename")
U.wait(function() return notified("forbidden: ") end, "the -32008 rename refusal")
H.results.rename_refusal = notified("forbidden: ")
H.results.notifications_before_archive = #H.results.notifications
U.answer_select(function(item) return (type(item) == "table" and item.id == "s-team1") or item == "Archive" end)
vim.cmd("OllieArchive")
U.wait(function() return #H.results.notifications > H.results.notifications_before_archive end, "the archive refusal")
H.results.archive_refusal = H.results.notifications[#H.results.notifications]
H.results.team_sent = sent
client.request = real_request
H.finish()
