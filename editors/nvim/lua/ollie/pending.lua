-- Prompts that wait: queued for after the running turn, injected into its next tool result, and the queued ones
-- a stop holds until the user sends them on. Methods of ollie.Chat (chat.lua).
local client = require("ollie.client")
local config = require("ollie.config")
local context = require("ollie.context")
local err_text = require("ollie.requests").err_text

local M = {}

---Methods of ollie.Chat, installed by chat.lua.
---@class ollie.ChatPending
local P = {}
M.methods = P

---Send a prompt that waits (ollie/queue or ollie/inject) with its contexts; once the daemon has it, show it as
---waiting.
---@param kind "queued"|"injected"
---@param text string
---@param contexts ollie.Context[]
function P:pend(kind, text, contexts)
  local method = kind == "queued" and "ollie/queue" or "ollie/inject"
  context.attach(contexts)
  self:with_session(function(session)
    local params = { session = session, text = text, context = context.wire(contexts) }
    if kind == "queued" then
      params.seen = client.seen(session) -- what the user saw: a turn still running, or its end too
    end
    client.request(method, params, function(err)
      if err then
        self.transcript:note("error: " .. err_text(err), "OllieError")
      else
        self.transcript:pend(kind, text, context.labels(contexts))
      end
    end)
  end)
end

---Queue a prompt for after the running turn, shown as queued.
---@param text string
---@param contexts ollie.Context[]|nil
function P:queue(text, contexts)
  self:pend("queued", text, contexts or {})
end

---The queued prompts as the daemon has them: a stop holds them (shown as held), `/queued` pops or drops them.
function P:sync_queue()
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
    self.queue_held = res.queueHeld == true and #texts > 0
    self.transcript:set_queued(texts, self.queue_held)
    if self.queue_held and not was_held then
      local key = (config.options.keymaps.send or {}).n or "send"
      self.transcript:note(string.format("the stop holds the queued prompts: %s on an empty prompt sends them, "
        .. "/queued clear drops them", key), "OllieQueued")
    end
  end)
end

---Send on the prompts a stop held (ollie/queue/run).
function P:run_queue()
  self.queue_held = false
  self:with_session(function(session)
    client.request("ollie/queue/run", { session = session }, function(err)
      if err then
        self.transcript:note("error: " .. err_text(err), "OllieError")
      end
    end)
    -- Shown as queued again until each one's turn starts (its `user` event).
    self:sync_queue()
  end)
end

---Add text (and the contexts of its `#` tags) to the running turn's next tool result, shown as injected.
---@param text string
---@return boolean sent false when a `#` tag could not be read (said in the transcript)
function P:inject(text)
  local clean, contexts = self:tags(text)
  if not clean then
    return false
  end
  self:pend("injected", clean, contexts)
  return true
end

---Injected prompts the turn has taken (into a tool result, or at its end) become lines of the transcript.
function P:injected_taken()
  for _, text in ipairs(self.transcript:settle("injected")) do
    self.transcript:note("↳ injected: " .. text, "OllieInjected")
  end
end

return M
