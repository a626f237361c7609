-- A saved conversation (`ollie/context` messages) drawn as the live turn drew it: prompts with their context as
-- compact lines, reasoning apart from the answer, steps from the `tool` objects the daemon rebuilds (title,
-- status, locations with lines), their output folded, and a cut-off answer with what it said so far.
local context = require("ollie.context")

local M = {}

-- How the daemon ends the content of a reply an interrupt cut short (core/ollie/agent/history.py).
M.INTERRUPTED = "[interrupted by the user: this reply was cut off here]"

---The text of a reply the daemon marked `interrupted`, without its marker.
---@param content string
---@return string
local function without_marker(content)
  local at = content:find(M.INTERRUPTED, 1, true)
  return at and (content:sub(1, at - 1):gsub("%s+$", "")) or content
end

---A step of a call: its `tool` object, or (a daemon before v2 history) one titled by the tool's name.
---@param call table a `tool_calls` entry
---@return table
local function step_of(call)
  if type(call.tool) == "table" then
    return call.tool
  end
  return { id = call.id, title = call.name or "tool", status = "completed", locations = {} }
end

---Render `messages` into a cleared transcript.
---@param t ollie.Transcript
---@param messages table[]
function M.render(t, messages)
  t:clear()
  local unanswered = false
  -- A session saved before the daemon kept cut-off answers has nothing after an interrupted prompt: say so.
  local function no_answer()
    if unanswered then
      t:note("_(no answer saved: the turn was interrupted)_", "OllieTurnEnd")
    end
  end
  for _, m in ipairs(messages or {}) do
    if m.role == "user" then
      no_answer()
      local labels, text = context.split_prompt(m.content or "")
      -- The daemon's labels when it sends them (the same code labels its blocks); else the plugin's own parse.
      if type(m.contextLabels) == "table" then
        labels = m.contextLabels
      end
      t:prompt(text, labels)
      unanswered = true
    elseif m.role == "assistant" then
      unanswered = false
      t:stream("reasoning", m.reasoning or "")
      t:stream("assistant", m.interrupted and without_marker(m.content or "") or (m.content or ""))
      for _, c in ipairs(m.tool_calls or {}) do
        t:add_call(step_of(c), c.steps)
      end
      if m.interrupted then
        t:turn_end("interrupted")
      end
    elseif m.role == "tool" then
      t:output(m.content or "", type(m.tool) == "table" and m.tool.status == "failed")
    end
  end
  no_answer()
end

return M
