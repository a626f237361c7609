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

U.call("ollie/submit", { text = "explain the mul function please" })

local picked = false
U.answer_select(function() return false end)
pickers.sessions(function() picked = true end)
U.wait(function() return picked end, "the sessions picker")
H.results.session_labels = H.results.selects[1].labels
H.results.session_prompt = H.results.selects[1].prompt

-- :OllieRename: pick the session, type its new title.
U.answer_select(function(_, label) return label:find("explain the mul", 1, true) ~= nil end)
vim.ui.input = function(opts, on_confirm)
  H.results.rename_default = opts.default
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
H.finish()
