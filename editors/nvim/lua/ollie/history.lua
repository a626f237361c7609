-- A saved conversation (`ollie/context` messages) drawn as the live turn drew it: prompts with their context as
-- compact lines, reasoning apart from the answer, steps from the `tool` objects the daemon rebuilds (title,
-- status, locations with lines), their output folded, and a cut-off answer with what it said so far.
local client = require("ollie.client")
local context = require("ollie.context")
local err_text = require("ollie.requests").err_text
local image_labels = require("ollie.render").image_labels

local M = {}

---What waits while a chat's conversation is asked for again (redraw).
---@class ollie.Redrawing
---@field events table[]      the session's events meanwhile
---@field then_run fun()[]    prompts typed meanwhile (sent once it is drawn)
---@field drawn fun()[]       what runs once it is drawn
---@field asked integer       how many times it was asked for (the last answer draws it)
---@field ended string|nil    the stop reason of the turn whose end asked for it
---@field held boolean|nil    from `hold`: a switch or a restart in flight (what acts on the session waits for it)

---Methods of ollie.Chat, installed by chat.lua: a session's conversation drawn anew in the chat.
---@class ollie.ChatHistory
local H = {}
M.methods = H

-- How the daemon ends the content of a reply an interrupt cut short (core/ollie/agent/history.py).
M.INTERRUPTED = "[interrupted by the user: this reply was cut off here]"

---The text of a reply the daemon marked `interrupted`, without its marker.
---@param content string
---@return string
local function without_marker(content)
  local at = content:find(M.INTERRUPTED, 1, true)
  return at and (content:sub(1, at - 1):gsub("%s+$", "")) or content
end

-- The line the file tools tell the model an edit saved the user's unsaved changes with (execute/editordocs.py); a
-- step's output printing it is marked "(this line is the step's output)" (execute/results.py), so never matches.
local SAVED = "^%[warning%] (.-) had unsaved changes in the editor: your edit was made on top of them and the file was "
  .. "saved with them$"

---The note the live chat showed under an edit that saved the user's unsaved changes with it (the daemon's `info`,
---which no history keeps), from the line the model was told it with.
---@param t ollie.Transcript
---@param content string|nil a tool result
local function saved_notes(t, content)
  for line in vim.gsplit(content or "", "\n", { plain = true }) do
    local name = line:match(SAVED)
    if name then
      t:note(name .. " had your unsaved changes in the editor: the agent's edit was made on top of them and the file "
        .. "was saved with them")
    end
  end
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

local function draw(t, messages, running, last_result, cut, reply, failed_as)
  t:clear()
  local unanswered, last_prompt = false, nil
  -- A prompt with nothing after it: its turn failed (the error is not saved), or a daemon before cut-off answers
  -- were kept saved nothing of an interrupted one. How the last turn ended is known: a failure never reads
  -- "interrupted".
  local function no_answer(failed)
    if failed and failed_as and failed_as.prompt == last_prompt then -- its error, as this Neovim was told it
      t:note(failed_as.error, "OllieError")
      t:turn_end("error", "no answer: this prompt failed before the model replied; send it again")
    elseif failed then
      t:turn_end("error", "no answer: this prompt failed before the model replied, its error not saved; send it again")
    elseif unanswered then
      t:turn_end("interrupted", "no answer saved: the turn failed or was interrupted")
    end
  end
  -- A "not known" line is said once a run (`again`), by the first turn shown: the one that said it may be compacted.
  local said = false
  local function turn_changes(c)
    local unknown = type(c) == "table" and c.unknown == true
    t:turn_changes(unknown and not said and vim.tbl_extend("force", c, { again = false }) or c)
    said = said or unknown
  end
  for _, m in ipairs(messages or {}) do
    if m.memory == true then
      -- The agent's notes of the history compaction replaced: never the user's prompt, nor one left unanswered.
      t:note("(earlier conversation compacted: the agent goes on from its notes of it)", "OllieTurnEnd")
    elseif m.role == "user" then
      no_answer()
      local labels, text = context.split_prompt(m.content or "")
      -- The daemon's labels when it sends them (the same code labels its blocks); else the plugin's own parse.
      if type(m.contextLabels) == "table" then
        labels = vim.list_extend({}, m.contextLabels)
      end
      vim.list_extend(labels, image_labels(m.images)) -- a prompt's images: what each was (the daemon sends no data)
      t:prompt(text, labels)
      unanswered, last_prompt = true, text
    elseif m.role == "assistant" then
      unanswered = false
      t:stream("reasoning", m.reasoning or "")
      t:stream("assistant", m.interrupted and without_marker(m.content or "") or (m.content or ""))
      for _, c in ipairs(m.tool_calls or {}) do
        t:add_call(step_of(c), c.steps)
      end
      turn_changes(m.turnChanges) -- above the turn's end, where the live turn drew it
      if m.interrupted then
        t:turn_end("interrupted")
      elseif #(m.tool_calls or {}) == 0 then
        t:turn_end("end") -- a reply with no call ends its turn: the line the live turn drew
      end
    elseif m.role == "tool" then
      local tool = type(m.tool) == "table" and m.tool or {}
      -- As the live step drew it (the history has no diffs; a collapsed result's images are named all the same).
      t:output(m.content or "", tool.status == "failed", tool, m.images)
      saved_notes(t, m.content)
      turn_changes(m.turnChanges)
    end
  end
  if running then
    -- What it said so far is not saved yet: the daemon sends it apart (`reply`), the rest streams on under it, the
    -- whole shows when the turn ends. Before, a chat switched back to a session mid-answer showed "…" alone.
    t:reply_header()
    if type(reply) == "table" then
      t:stream("reasoning", type(reply.reasoning) == "string" and reply.reasoning or "")
      t:stream("assistant", type(reply.content) == "string" and reply.content or "")
    else
      t:add({ "…" }, "OllieTurnEnd")
    end
  elseif cut then
    -- What a turn its daemon's death cut short had shown, which no daemon saved; its prompt when the history lacks it.
    if cut.prompt and not (unanswered and last_prompt == cut.prompt) then
      no_answer()
      t:prompt(cut.prompt, cut.labels)
    end
    for _, part in ipairs(cut.parts) do
      t:stream(part.role, part.text)
    end
    t:turn_end("error", "cut short: the daemon stopped (what it had shown of this turn was not saved)")
  else
    no_answer(unanswered and last_result == "error")
    local last = messages and messages[#messages]
    if type(last) == "table" and last.role == "tool" then
      -- No reply after its steps: the turn failed, or stopped (the session closed: its editor, or ollie) as they ran.
      local says = "no answer after these steps: the turn failed or stopped"
      t:turn_end(last_result == "error" and "error" or "interrupted", says)
    end
  end
end

---Whether the history's last message is what a turn its daemon's death cut short had shown: the daemon saved the
---answer, then died before the turn's end (a postTurn hook ran). Drawn again, it showed twice.
---@param messages table[]
---@param cut ollie.Tail
---@return boolean
local function saved(messages, cut)
  local last = messages[#messages]
  if type(last) ~= "table" or last.role ~= "assistant" then
    return false
  end
  local said = { assistant = "", reasoning = "" }
  for _, part in ipairs(cut.parts) do
    said[part.role] = said[part.role] .. part.text
  end
  return vim.trim(said.assistant) == vim.trim(without_marker(last.content or ""))
    and vim.trim(said.reasoning) == vim.trim(last.reasoning or "")
end

---Render `messages` into a cleared transcript.
---@param t ollie.Transcript
---@param messages table[]
---@param running boolean|nil the session runs a turn now: its last prompt is being answered
---@param last_result string|nil how the session's last turn ended (`info.lastTurnResult` of ollie/session/load)
---@param cut ollie.Tail|nil what a turn its daemon's death cut short had shown (drawn last, marked so)
---@param reply table|nil the running turn's reply so far (`ollie/context`'s `reply`)
---@param failed_as {prompt: string, error: string}|nil what the chat said of its last turn's error (kept nowhere)
function M.render(t, messages, running, last_result, cut, reply, failed_as)
  t:bulk(function() draw(t, messages, running, last_result, cut, reply, failed_as) end)
end

---Show another session in this chat (its saved conversation).
---@param session string
---@param after fun()|nil runs once the conversation is drawn
---@param last_result string|nil how its last turn ended (ollie/session/load's `info.lastTurnResult`)
function H:switch(session, after, last_result)
  local left = self.session
  if self.redrawing and session ~= left then
    -- What was held (a prompt typed right after :OllieNew waits for the new session) is the session left's: its
    -- events are not drawn in this one.
    self.redrawing.events, self.redrawing.ended = {}, nil
  end
  self:set_session(session)
  self.running = false
  self:redraw(function()
    if after then
      after()
    end
    self:restore_queue() -- what it had queued when an editor before quit during a turn
    self:take_back(left) -- what it queued in the session it showed: it would run there unseen
  end, nil, last_result)
  -- The statusline's state, cost and title are the session's (whether it runs a turn comes with its conversation:
  -- redraw).
  client.request("ollie/state", { session = session }, function(_, state)
    if type(state) == "table" and session == self.session then
      self.state = state.state or self.state
      self.cost = type(state.cost) == "table" and state.cost.session or self.cost
      self.title = type(state.title) == "string" and state.title or self.title
      self:set_plan(state.plan)
      vim.cmd("redrawstatus! | redrawtabline")
    end
  end)
end

---A session's whole conversation (`ollie/context`), page by page: the daemon answers at most 1,000 messages at a
---time and says where the next page starts (`next`); `cb(err, result)` gets them all in one result.
---@param session string|nil nil: the daemon's default session
---@param cb fun(err: table|nil, result: table|nil)
function M.read_context(session, cb)
  local messages = {}
  local function from(offset)
    client.request("ollie/context", { session = session, offset = offset }, function(err, res)
      if err then
        return cb(err, nil)
      end
      vim.list_extend(messages, res.messages or {})
      if type(res.next) == "number" and res.next > offset then -- only forward: never the same page again
        return from(res.next)
      end
      res.messages = messages
      cb(nil, res)
    end)
  end
  from(0)
end

---Hold the prompts typed from now until the next redraw has drawn the conversation (`:OllieRestart`: the fresh
---daemon has not loaded the session yet), dropping the events held so far and the answers of redraws asked before.
function H:hold()
  local held = self.redrawing or { then_run = {}, drawn = {}, asked = 0 }
  held.events, held.asked, held.held = {}, held.asked + 1, true
  self.redrawing = held
end

---No daemon came to draw the chat anew (a restart that failed, one that died again): it says why, and the prompts
---typed meanwhile go back in the input (they waited, neither sent nor put back).
---@param why string
function H:release(why)
  local held = self.redrawing
  self.redrawing = nil
  self:tell(why)
  for _, fn in ipairs(held and held.then_run or {}) do
    fn(why)
  end
end

---Draw the session's saved conversation anew, and the events held meanwhile that it does not show.
---@param after fun()|nil runs once it is drawn
---@param ended string|nil the stop reason of the turn that has just ended (the history keeps none but an interrupt)
---@param last_result string|nil how the session's last turn ended, when a resume says so
function H:redraw(after, ended, last_result)
  local session = self.session
  -- Until the answer comes, events wait and prompts typed meanwhile are held: the drawing clears the transcript.
  local held = self.redrawing or { events = {}, then_run = {}, drawn = {}, asked = 0 }
  self.redrawing = held
  held.ended = ended or held.ended
  if after then
    table.insert(held.drawn, after)
  end
  held.asked = held.asked + 1
  local asked = held.asked
  M.read_context(session, function(err, res)
    if session ~= self.session or self.redrawing ~= held or held.asked ~= asked then
      return -- another session was picked meanwhile, or asked for again: the last answer draws it
    end
    self.redrawing = nil
    if err then
      self.transcript:note("error: " .. err_text(err), "OllieError")
    else
      -- Whether a turn runs, and whether its prompt is in the history, as they were when the history was read: Enter
      -- then queues, and the history is drawn again, whole, when the turn ends. Before, an `ollie/state` asked first
      -- could say idle while the history read next held the prompt of a turn begun between the two: drawn as never
      -- answered, its reply dropped.
      local cut = self.cut_short
      if cut and saved(res.messages or {}, cut) then
        cut, self.lost_turn = nil, false -- its answer is in the history: no turn to send again
      end
      M.render(self.transcript, res.messages, res.answering == true, last_result, cut, res.reply, self.failed)
      self.cut_short = nil
      if session and type(res.seq) == "number" then
        client.saw(session, res.seq) -- the user sees the history: the events it holds, its turns' ends too
      end
      self.running = res.running == true
      self.redraw_at_end = self.running
    end
    local stop = held.ended -- how the last turn ended, unless another began since
    -- The daemon says which events the history holds: those up to its `seq`. The later ones (a queued prompt's
    -- turn begun meanwhile: its `## You` heading and what follows) are drawn from the held events, as they would
    -- have been had they come after the answer. Before, a held prompt was looked for by its text in the history: a
    -- second "continue" (or a prompt the last one starts with) was taken as drawn and lost its heading, and a turn
    -- already in the history could be drawn twice.
    local upto = not err and tonumber(res.seq) or math.huge
    for _, ev in ipairs(held.events) do
      local told = (tonumber(ev.seq) or 0) <= upto -- the history holds it (its turn's end line too)
      if ev.role == "turn" then
        self:on_event(ev, told and not err)
        stop = ev.content ~= "start" and ev.content or nil
      elseif not told then
        self:on_event(ev)
      end
    end
    if stop and not err then
      -- The history keeps no stop reason but an interrupt: it drew this turn's end as `end`, or none (an error).
      self.transcript:restate_end(stop)
    end
    for _, fn in ipairs(not err and held.drawn or {}) do
      fn()
    end
    for _, fn in ipairs(held.then_run) do
      fn()
    end
  end)
end

return M
