-- A session's turns as :OllieRewind offers them: the prompt that started each (from the daemon's history) and
-- when it started (seen by this editor: the daemon keeps no time per turn).
local context = require("ollie.context")

local M = {}

---@type table<string, table<string, integer[]>> by session, then prompt text: when its turns started (os.time)
M.started = {}

---Note that a turn of `session` started now with the prompt `text` (sent from the chat, or a queued one).
---@param session string
---@param text string
function M.note(session, text)
  M.started[session] = M.started[session] or {}
  local times = M.started[session][vim.trim(text)] or {}
  table.insert(times, os.time())
  M.started[session][vim.trim(text)] = times
end

---The user prompts of a conversation (`ollie/context` messages), their context blocks left out, in order.
---@param messages table[]|nil
---@return string[]
function M.prompts(messages)
  local prompts = {}
  for _, m in ipairs(type(messages) == "table" and messages or {}) do
    if m.role == "user" and type(m.content) == "string" then
      local _, text = context.split_prompt(m.content)
      table.insert(prompts, text)
    end
  end
  return prompts
end

---The first non-blank line of `text`, cut with "…" past `max` characters.
---@param text string
---@param max integer
---@return string
local function first_line(text, max)
  local line = ""
  for _, l in ipairs(vim.split(text, "\n", { plain = true })) do
    if vim.trim(l) ~= "" then
      line = vim.trim(l)
      break
    end
  end
  return vim.fn.strchars(line) > max and (vim.fn.strcharpart(line, 0, max - 1) .. "…") or line
end

---@class ollie.TurnItem
---@field turn integer
---@field prompt string|nil the prompt that started it (nil when unknown)
---@field started integer|nil when it started (os.time; nil when this editor did not see it)
---@field files {path: string}[] the files it changed (ollie/changes lists the first ones)
---@field more integer|nil how many more it changed than `files` lists
---@field unknown boolean|nil what it changed is not known (its diff failed)
---@field plan boolean|nil it changed the plan (which a rewind to before it puts back)

---Attach their prompts to turns 1..`count` (and when each started, as noted), only when there is one prompt per
---turn: after a /clear or a compaction the history has fewer, and a wrong prompt would rewind the wrong turn.
---@param items ollie.TurnItem[]
---@param count integer
---@param prompts string[]
---@param session string|nil
function M.attach_prompts(items, count, prompts, session)
  if #prompts ~= count then
    return
  end
  -- A prompt sent twice ("go on") has two times: the later turn takes the later one.
  local later, seen = {}, {} -- by turn: how many later turns had its prompt; by prompt: how many so far
  for turn = count, 1, -1 do
    local text = vim.trim(prompts[turn])
    later[turn] = seen[text] or 0
    seen[text] = later[turn] + 1
  end
  local started = M.started[session or ""] or {}
  for _, item in ipairs(items) do
    item.prompt = prompts[item.turn]
    local times = started[vim.trim(item.prompt)] or {}
    item.started = times[#times - later[item.turn]]
  end
end

---A turn's label: "turn 3 · fix the login test · 5 min ago — 2 files: a.py, b.py".
---@param item ollie.TurnItem
---@return string
function M.label(item)
  local parts = { "turn " .. item.turn }
  if item.prompt and item.prompt ~= "" then
    table.insert(parts, first_line(item.prompt, 50))
  end
  local when = require("ollie.pickers").since(item.started)
  if when ~= "" then
    table.insert(parts, when)
  end
  local names = vim.tbl_map(function(f) return f.path end, item.files)
  local count = #names + (item.more or 0)
  local files = item.unknown and "changes unknown" or count == 0 and "no file changes"
    or (count .. " file" .. (count == 1 and "" or "s") .. ": " .. table.concat(names, ", ", 1, math.min(#names, 4))
      .. (count > 4 and ", …" or ""))
  if item.plan then -- the rewind puts the plan back too: no no-op, as "no file changes" alone said
    files = (count == 0 and not item.unknown) and "the plan, no files" or (files .. "; the plan")
  end
  return table.concat(parts, " · ") .. " — " .. files
end

return M
