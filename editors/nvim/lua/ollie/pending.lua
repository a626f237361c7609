-- Prompts that wait: queued for after the running turn, injected into its next tool result, and the queued ones
-- a stop holds until the user sends them on. Methods of ollie.Chat (chat.lua).
local client = require("ollie.client")
local config = require("ollie.config")
local context = require("ollie.context")
local err_text = require("ollie.requests").err_text
local input = require("ollie.input")
local savedqueue = require("ollie.savedqueue")

local M = {}

-- The sessions whose queued prompts an editor before this one saved (it quit or crashed during a turn), or this one's
-- daemon that died held, not queued again yet: they are when the session is shown (restore_queue).
---@type table<string, string> by session, what ended the daemon that had them
local carried = {}
for _, q in ipairs(savedqueue.read()) do
  carried[q.session] = savedqueue.ended(q)
end

---The send keys' names, for the notes that say what they do: insert mode's first (the input's own mode; a stop with
---<C-c> leaves one typing, where the normal-mode <CR> the note named typed a line break).
local function send_key()
  local send = config.options.keymaps.send or {}
  local keys = vim.tbl_filter(function(k) return type(k) == "string" end, { send.i, send.n })
  return #keys > 0 and table.concat(keys, " or ") or "send"
end

---What the user may do with `n` held prompts (one is "it", not "them"): send them on, or drop them. Each key or
---command starts a line: mid-line, a narrow chat's 'breakat' split it after its "-" or "/" (`<C-` above `s>`).
---@param n integer
---@return string
local function held_choices(n)
  local it = n == 1 and "it" or "them"
  return string.format("%s on an empty prompt sends %s, your next prompt runs after %s,\n/queued clear drops %s",
    send_key(), it, it, it)
end

---A prompt as typed: its text (`#` tags and all) and the contexts it came with that the text does not say.
---@class ollie.Typed
---@field text string
---@field given ollie.Context[]

---Methods of ollie.Chat, installed by chat.lua.
---@class ollie.ChatPending
local P = {}
M.methods = P

---Send a prompt that waits (ollie/queue or ollie/inject) with its contexts; once the daemon has it, show it as
---waiting; refused, what was typed goes back in the input (`#` tags and all: it was gone, its text with it).
---@param kind "queued"|"injected"
---@param text string
---@param contexts ollie.Context[]
---@param done fun()|nil runs once the daemon has it
---@param typed ollie.Typed|nil what was typed in the input (default: `text`)
function P:pend(kind, text, contexts, done, typed)
  local method = kind == "queued" and "ollie/queue" or "ollie/inject"
  context.attach(contexts)
  self:with_session(function(session)
    local params = { session = session, text = text, context = context.wire(contexts) }
    if kind == "queued" then
      params.seen = client.seen(session) -- what the user saw: a turn still running, or its end too
      params.images = context.images(contexts) -- read as it is queued (as ollie/submit's), sent with its turn
    end
    client.request(method, params, function(err)
      if err then
        self:put_back(typed and typed.text or text, typed and typed.given or {}, err_text(err), kind)
      elseif kind == "queued" and session ~= self.session then
        self:take_back(session) -- the chat moved on (:OllieNew) while it was sent: not shown here, not run there
      else
        self.transcript:pend(kind, text, context.labels(contexts))
        if kind == "queued" then -- kept until its turn starts: the daemon's queue ends with the editor
          savedqueue.add(session, { text = text, context = params.context, labels = context.labels(contexts),
            images = params.images })
          self.typed_queued = self.typed_queued or {} -- as typed, for a take back: the daemon's text lost the tags
          self.typed_queued[text] = typed
        end
        if done then
          done()
        end
      end
    end)
  end)
end

---Queue a prompt for after the running turn, shown as queued.
---@param text string
---@param contexts ollie.Context[]|nil
---@param done fun()|nil runs once the daemon has it
---@param typed ollie.Typed|nil what was typed in the input
function P:queue(text, contexts, done, typed)
  self:pend("queued", text, contexts or {}, done, typed)
end

---Send a prompt behind the held queued prompts: queued, then the queue runs (the held ones first, in order).
---@param text string
---@param contexts ollie.Context[]
---@param typed ollie.Typed what was typed in the input
function P:send_behind(text, contexts, typed)
  self:queue(text, contexts, function() self:run_queue() end, typed)
end

---The prompts queued in `session`, which this chat showed and shows no more (:OllieNew, a session picked): they would
---run there unseen. Each is taken out of its queue and put back in the input, unsent, and said; not while another chat
---shows that session (they are seen there).
---@param session string|nil
function P:take_back(session)
  if not session or session == self.session or #require("ollie.chat").all_by_session(session) > 0 then
    return
  end
  local taken = {}
  local function next_one()
    client.request("ollie/popQueue", { session = session }, function(err, res)
      local popped = not err and type(res) == "table" and res.text or nil
      if type(popped) == "string" then
        local _, text = context.split_prompt(popped)
        savedqueue.take(session, text)
        table.insert(taken, 1, self:typed_back(text).text) -- the latest first: back in the order they were queued
        return next_one()
      end
      for _, text in ipairs(taken) do
        self:back_in_input(text, "you queued this in the session you left, where nobody would see it run")
      end
    end)
  end
  next_one()
end

---Take back the latest queued prompt (<Up> on an empty input, `/queued pop`): it is in the input again, its images
---kept with it, to edit and send again; the others stay queued.
function P:pop_queued()
  local session = self.session
  if not session then -- no session yet: nothing of this chat is queued
    return self.transcript:aside("nothing is queued")
  end
  client.request("ollie/popQueue", { session = session }, function(err, res)
    local popped = not err and type(res) == "table" and res.text or nil
    if type(popped) ~= "string" then
      return self.transcript:aside(err and ("error: " .. err_text(err)) or "nothing is queued", err and "OllieError")
    end
    local labels, text = context.split_prompt(popped)
    savedqueue.take(session, text)
    local typed = self:typed_back(text)
    -- Queued elsewhere (another Neovim, before a restart): the contexts the daemon gave back, labelled as its blocks.
    local given = {}
    for i, c in ipairs(type(res.context) == "table" and res.context or {}) do
      table.insert(given, vim.tbl_extend("force", c, { label = labels[i] or c.uri }))
    end
    for i, image in ipairs(type(res.images) == "table" and res.images or {}) do
      local mime = tostring(image.mimeType or "image"):gsub("^image/", "")
      table.insert(given, { image = "queued-" .. i, data = image.data, label = ("image %d (%s)"):format(i, mime) })
    end
    input.clear(self.input_buf)
    input.append(self.input_buf, typed.text)
    -- As typed, its tags bring its files and images again; else what the daemon gave back.
    self.kept = vim.list_extend(self.kept or {}, typed.given or given)
    input.render_kept(self.input_buf, self.kept)
    self:sync_queue()
  end)
end

---A queued prompt taken back (`text` as the daemon queued it) as this chat's user typed it, `#` tags and all, with
---the contexts the text does not say; queued elsewhere (another Neovim, before a restart): its text, no `given`.
---@param text string
---@return { text: string, given: ollie.Context[]|nil }
function P:typed_back(text)
  local typed = (self.typed_queued or {})[text]
  if typed then
    self.typed_queued[text] = nil
  end
  return typed or { text = text }
end

---Put a prompt that was not sent back in the input, saying `why`; once the chat is drawn again, when it is being
---drawn (a session switched to, a Restart): the drawing clears the transcript.
---@param text string
---@param why string
function P:back_in_input(text, why)
  local function put_back()
    input.append(self.input_buf, text)
    self.transcript:note("not sent: " .. why .. "; it is back in the input: " .. text, "OllieQueued")
  end
  if self.redrawing then
    table.insert(self.redrawing.then_run, put_back)
  else
    put_back()
  end
end

---The queued prompts as the daemon has them: a stop holds them (shown as held), `/queued` pops or drops them.
---@param released boolean|nil just sent on (ollie/queue/run): the daemon may answer before it lets them go
function P:sync_queue(released)
  if not self.session then
    return
  end
  client.request("ollie/state", { session = self.session }, function(err, res)
    if err or type(res) ~= "table" then
      return
    end
    local texts = {}
    for _, p in ipairs(type(res.queuedPrompts) == "table" and res.queuedPrompts or {}) do
      local labels, text = context.split_prompt(p)
      table.insert(texts, { text = text, labels = labels })
    end
    local was_held = self.queue_held
    -- Those queued again after a quit wait too (restore_queue), though the daemon does not mark them held.
    self.queue_held = not released and (res.queueHeld == true or was_held == true) and #texts > 0
    self.transcript:set_queued(texts, self.queue_held)
    if self.queue_held and not was_held then
      self.transcript:note(string.format("the stop holds the queued prompt%s:\n%s", #texts == 1 and "" or "s",
        held_choices(#texts)), "OllieQueued")
    end
    if #texts == 0 and not res.running and not carried[self.session] then
      savedqueue.forget(self.session) -- run, popped or dropped (`/queued clear`)
      self.typed_queued = nil
    end
  end)
end

---Send on the prompts a stop held (ollie/queue/run).
function P:run_queue()
  self.queue_held = false
  self:with_session(function(session)
    client.request("ollie/queue/run", { session = session }, function(err)
      if err then
        self.transcript:aside("error: " .. err_text(err), "OllieError")
      end
    end)
    -- Shown as queued again until each one's turn starts (its `user` event).
    self:sync_queue(true)
  end)
end

---The session is shown: the prompts it had queued in the daemon of an editor that quit or crashed during a turn
---are queued again, in order, and held: they run before the next prompt (or on the send key, empty).
function P:restore_queue()
  local session = self.session
  local draft, ended_then
  if session then
    draft, ended_then = savedqueue.take_draft(session, vim.fn.getcwd())
  end
  if draft then -- typed and not sent when an editor before quit or crashed (said: a crash is no quit of hers)
    self.transcript:note(("(not sent before %s: it is back in the input)"):format(ended_then), "OllieQueued")
    self:refill(draft, {})
  end
  local ended = session and carried[session]
  if not ended then
    return
  end
  carried[session] = nil
  savedqueue.claim(session)
  local saved = {}
  for _, q in ipairs(savedqueue.read()) do
    saved = q.session == session and q.prompts or saved
  end
  local shown = {}
  local function requeue(i)
    local p = saved[i]
    if p then
      local params = { session = session, text = p.text, context = p.context,
        images = savedqueue.images(p.images) } -- its images too
      client.request("ollie/queue", params, function(err)
        if err then
          savedqueue.take(session, p.text)
          self.transcript:note("error: a prompt queued before " .. ended .. " could not be queued again: "
            .. err_text(err), "OllieError")
        else
          table.insert(shown, { text = p.text, labels = p.labels })
        end
        requeue(i + 1)
      end)
    elseif #shown > 0 and session == self.session then
      self.queue_held = true
      self.transcript:set_queued(shown, true)
      local one = #shown == 1
      self.transcript:note(string.format("%d queued prompt%s from before %s wait%s:\n%s", #shown,
        one and "" or "s", ended, one and "s" or "", held_choices(#shown)), "OllieQueued")
    end
  end
  requeue(1)
end

---Forget the saved queued prompts this editor's daemon held (a Restart: they ended with it). Those saved by an editor
---that quit are kept, to be queued again when their session is shown: no daemon of this editor had them.
function M.forget()
  savedqueue.forget()
end

---The daemon died with queued prompts: those saved are queued again, held, when their session is shown (restore_queue).
function M.carry()
  for _, q in ipairs(savedqueue.read()) do
    carried[q.session] = carried[q.session] or "the daemon stopped"
  end
end

---Add text (and the contexts of its `#` tags) to the running turn's next tool result, shown as injected.
---@param text string
---@return boolean sent false when a `#` tag could not be read (said in the transcript)
function P:inject(text)
  local clean, contexts = self:tags(text)
  if not clean then
    return false
  end
  self:pend("injected", clean, contexts, nil, { text = text, given = {} })
  return true
end

---Injected prompts the turn has taken into a tool result become lines of the transcript.
function P:injected_taken()
  for _, p in ipairs(self.transcript:settle("injected")) do
    self.transcript:note("↳ injected: " .. p.prompt, "OllieInjected")
  end
end

return M
