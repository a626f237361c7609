-- One chat per tabpage: a read-only transcript with the input area below it, bound to a daemon session.
-- Everything is async: requests answer to callbacks; the editor never waits for the daemon.
local chatwin = require("ollie.chatwin")
local client = require("ollie.client")
local config = require("ollie.config")
local context = require("ollie.context")
local input = require("ollie.input")
local render = require("ollie.render")
local requests = require("ollie.requests")
local savedqueue = require("ollie.savedqueue")
local turns = require("ollie.turns")

local M = {}

-- How long after the last change to the input its text is saved as the session's draft.
local DRAFT_SAVE_MS = 500

---@class ollie.Chat
---@field tab integer                 the tabpage it belongs to
---@field transcript ollie.Transcript
---@field input_buf integer
---@field session string|nil          its daemon session (nil until the daemon named one)
---@field waiting fun(session: string)[] what waits for the session
---@field draft_saved {session: string|nil, text: string}|nil what Chat:save_draft wrote last
---@field running boolean
---@field state string
---@field cost number
---@field title string                 its session's title as the daemon says it ("" while it has none)
---@field origin_win integer|nil      the last file window of the tab (for #buffer, #selection, locations)
---@field commands_running integer|nil slash commands sent and not answered yet
---@field command_info table<string, true|"error"|"exec"> `info` (`error`; `exec`, not drawn yet) texts seen while a
---  command ran
---@field behind_told table<string, boolean> the files whose step-changed-under-unsaved-buffer notice vim.notify told
---@field steps_running {id: string, title: string}[] the steps of the turn that run, in the order they began
---@field name string|nil         a named chat's name (`:OllieChat name`); a tab's own chat gets one when replaced
---@field quitting integer|nil     the throwaway buffer a chat window being quit shows (chatwin.lua)
---@field queue_held boolean|nil   a stop (or a quit: restore_queue) holds the queued prompts: the next prompt goes
---                                 behind them, the send key on an empty prompt sends them on
---@field id string                the suffix of its buffers' names
---@field redrawing ollie.Redrawing|nil while the conversation is asked for again (redraw, history.lua)
---@field redraw_at_end boolean|nil the transcript was made anew during a turn: draw it all again when it ends
---@field kept ollie.Context[]|nil the contexts of a prompt put back in the input that its text does not say (a
---                                 `:'<,'>Ollie` range): they go with the next prompt sent from it
---@field tail ollie.Tail|nil       what the running turn showed since its last step (no daemon saved it yet)
---@field lost_turn boolean|nil  its daemon died as it ran a turn (said once the next has the session)
---@field cut_short ollie.Tail|nil  that of a turn its daemon's death cut short: drawn again under the history
---@field failed {prompt: string, error: string}|nil the error said of the last turn (the history keeps none)
---@field told {why: string, row: integer, tries: integer|nil}|nil why it has no daemon, as it said last, and its
---transcript's end then
---@field backend_said string|nil the backend error its opening note said (backend.lua: a turn's is not said again)
---@field plan {content: string, status: string}[]|nil its session's task plan, as the daemon said it last (plan.lua)
---@field plan_win integer|nil   the plan's float (plan.lua)
---@field plan_buf integer|nil   its buffer
---@field retry {what: string, till: number}|nil a failed request's wait to retry (`limitretry`), till vim.uv.now()

---@class ollie.Tail
---@field prompt string|nil   the turn's prompt, when no step came after it
---@field labels string[]
---@field parts {role: string, text: string}[] the reasoning and answer streamed
local Chat = {}
Chat.__index = Chat

---@type table<integer, ollie.Chat> the chat each tabpage shows
M.chats = {}
---@type table<string, ollie.Chat> the named chats, shown in a tab or not
M.named = {}
---@type ollie.Chat[] every chat made, those whose tab closed among them (a session file may show them again)
local every = {}
-- The daemon's default session goes to the first chat; each later one gets a session of its own.
local default_claimed = false
---@type ollie.Chat|nil the chat that took the daemon's default session
local first_chat

local function err_text(err)
  return type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)
end

---The chat of the current tabpage (made when `create` and there is none).
---@param create boolean|nil
---@return ollie.Chat|nil
function M.get(create)
  local tab = vim.api.nvim_get_current_tabpage()
  local chat = M.chats[tab]
  local origin = vim.t[tab].ollie_review_of
  if not chat and origin and vim.api.nvim_tabpage_is_valid(origin) and M.chats[origin] then
    -- A diff tab of :OllieChanges has no chat: it stands for the chat the review came from. `:Ollie` there goes
    -- back to that chat (before, it made a new chat, with a new session, in the diff tab).
    if create then
      vim.api.nvim_set_current_tabpage(origin)
    end
    return M.chats[origin]
  end
  if not chat and create then
    chat = M.new(tab)
  end
  return chat
end

---The chats showing a session: a session picked in a second tab (:OllieSessions) shows in both.
---@param session string
---@return ollie.Chat[]
function M.all_by_session(session)
  local found, seen = {}, {}
  for _, chats in ipairs({ M.chats, M.named }) do
    for _, chat in pairs(chats) do
      if chat.session == session and not seen[chat] then
        seen[chat] = true
        table.insert(found, chat)
      end
    end
  end
  return found
end

---The (first) chat showing a session.
---@param session string
---@return ollie.Chat|nil
function M.by_session(session)
  return M.all_by_session(session)[1]
end

---Show the chat named `name` in the current tab (made, with a session of its own, when there is none), in
---the windows of the chat the tab showed; that one stays reachable by name (`tab1` for a tab's own chat).
---@param name string
---@return ollie.Chat
function M.show_named(name)
  local tab = vim.api.nvim_get_current_tabpage()
  local old = M.chats[tab]
  local chat = M.named[name] or M.new(tab, name)
  if old and old ~= chat then
    if not old.name then
      old.name = "tab" .. vim.api.nvim_tabpage_get_number(tab)
      M.named[old.name] = old
    end
    local tw, iw = old:windows()
    for _, pair in ipairs({ { tw, chat.transcript.buf }, { iw, chat.input_buf } }) do
      if pair[1] then
        vim.api.nvim_win_set_buf(pair[1], pair[2])
        vim.w[pair[1]].ollie_role = nil -- (its bars were the other buffer's: the named chat's showed its buffer names)
      end
    end
  end
  chat.tab = tab
  M.chats[tab] = chat
  chat:adopt()
  return chat
end

---Run `fn(session)` with the session a code action runs in: this tab's chat's, else the first chat's (nil when no
---chat is open: the daemon's default), so that its turn shows in a chat.
---@param fn fun(session: string|nil)
function M.with_action_session(fn)
  -- A chat still asking for its session (just opened) is waited for: the turn's first events, its prompt among
  -- them, went to a session no chat had yet, and the answer showed under no prompt.
  local chat = M.get(false) or first_chat
  if chat then
    return chat:with_session(fn)
  end
  fn(nil)
end
client.with_action_session = M.with_action_session

---Every chat made, those whose tab closed among them (a session file may show them again: sessionfile.lua).
---@return ollie.Chat[]
function M.every()
  return every
end

---The names of the named chats, for :OllieChat's completion.
---@return string[]
function M.names()
  local names = vim.tbl_keys(M.named)
  table.sort(names)
  return names
end

---A new chat for a tabpage; a named one (`:OllieChat name`) is kept by its name too.
---@param tab integer
---@param name string|nil
---@return ollie.Chat
function M.new(tab, name)
  local self = setmetatable({ tab = tab, waiting = {}, running = false, state = "idle", cost = 0, title = "",
    command_info = {}, behind_told = {}, steps_running = {}, name = name,
    id = name or tostring(tab) },
    Chat)
  self:make_transcript()
  self:make_input()
  local cur = vim.api.nvim_get_current_win()
  self.origin_win = chatwin.is_file_win(cur) and cur or nil
  M.chats[tab] = self
  table.insert(every, self)
  if name then
    M.named[name] = self
  end
  input.load_commands()
  -- An approval question waits while the user types (permission.lua): note their keys from now on.
  require("ollie.permission").watch_keys()
  if not name and not default_claimed then
    -- The daemon's default session is this chat's from the start, not from its first prompt: a turn there that the
    -- chat did not send (a code action's) shows in it too.
    self:with_session(function() end)
  end
  return self
end

local function alive(buf)
  return vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_is_loaded(buf)
end

---When the user wipes (:bw) or deletes (:bd) one of the chat's buffers, make it anew once that is over.
---@param chat ollie.Chat
---@param buf integer
local function watch(chat, buf)
  vim.api.nvim_create_autocmd({ "BufWipeout", "BufUnload" }, {
    buffer = buf,
    once = true,
    callback = function()
      vim.schedule(function()
        if vim.v.exiting == vim.NIL then
          chat:revive()
        end
      end)
    end,
  })
end

---The transcript buffer and its keys.
function Chat:make_transcript()
  self.transcript = render.new("ollie://chat/" .. self.id)
  local buf = self.transcript.buf
  input.map(buf, "stop", function() self:stop() end)
  input.map(buf, "close", function() self:close() end)
  input.map(buf, "focus_input", function() self:focus_input(true) end)
  if config.options.keymaps.focus_input.n then -- the other keys that start typing: E21 ('modifiable' off) and no more
    for _, key in ipairs({ "a", "A", "I", "o", "O" }) do
      vim.keymap.set("n", key, function() self:focus_input(true) end, { buffer = buf, desc = "ollie: focus input" })
    end
  end
  input.map(buf, "open_location", function() self:open_location(true) end)
  input.map(buf, "toggle_plan", function() self:toggle_plan() end)
  chatwin.guard_file_keys(buf, function() self:open_location(false) end)
  vim.keymap.set({ "n", "x" }, "gx", chatwin.open_address, { buffer = buf, desc = "ollie: open address" })
  watch(self, buf)
end

---The input buffer and its keys.
function Chat:make_input()
  self.input_buf = input.new("ollie://input/" .. self.id, {
    send = function() self:send_input("send") end,
    inject = function() self:send_input("inject") end,
    -- In insert mode (where :OllieChat leaves the user) it stops a running turn and the typing goes on; with no
    -- turn running it leaves insert mode, as <C-c> does anywhere else.
    stop = function()
      if self.running or not vim.api.nvim_get_mode().mode:find("^i") then
        self:stop()
      else
        vim.cmd("stopinsert")
      end
    end,
    close = function() self:close() end,
    -- As in Claude Code: on an empty input it takes back the latest queued prompt; else the key does what it does.
    take_back = function()
      local queued = vim.tbl_filter(function(p) return p.kind == "queued" end, self.transcript.pending)
      if input.text(self.input_buf) == "" and #queued > 0 then
        return self:pop_queued()
      end
      local key = config.options.keymaps.take_back[vim.api.nvim_get_mode().mode:sub(1, 1)] or "<Up>"
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(key, true, false, true), "n", false)
    end,
  })
  watch(self, self.input_buf)
  -- What is typed is saved as the session's draft a moment after each change (not only at :qa: a kill -9 of Neovim,
  -- a terminal closed, kept it nowhere).
  local timer = assert(vim.uv.new_timer())
  vim.api.nvim_buf_attach(self.input_buf, false, {
    on_lines = function()
      timer:start(DRAFT_SAVE_MS, 0, vim.schedule_wrap(function() self:save_draft() end))
    end,
    on_detach = function() timer:close() end,
  })
end

---Save what the input holds as the session's draft, when it changed since saved (a draft moved with the input to
---another session leaves the one it was saved under); a session with no turn shown yet saves it for its workspace.
function Chat:save_draft()
  if not (self.session and alive(self.input_buf)) then
    return -- (a Neovim whose terminal closed has unloaded it by VimLeavePre: what was saved stays)
  end
  local text, saved = input.text(self.input_buf), self.draft_saved or { text = "" }
  if saved.session ~= self.session and saved.text ~= "" then
    savedqueue.keep_draft(saved.session, "")
    saved = { text = "" }
  end
  if text ~= saved.text then
    savedqueue.keep_draft(self.session, text, not next(self.transcript.typed) and vim.fn.getcwd() or nil)
  end
  self.draft_saved = { session = self.session, text = text }
end

---Make anew the buffers the user wiped or deleted; a new transcript shows the session's conversation again.
function Chat:revive()
  if not alive(self.transcript.buf) then
    pcall(vim.api.nvim_buf_delete, self.transcript.buf, { force = true })
    self:make_transcript()
    if self.session then
      self:redraw()
    end
  end
  if not alive(self.input_buf) then
    pcall(vim.api.nvim_buf_delete, self.input_buf, { force = true })
    self:make_input()
  end
end

---Run `fn(session)` once the chat has a daemon session (asked for on first use); `failed(why)` when none came (it
---says why; without it, the chat does). While a switch (or a restart) is in flight it waits until the session
---switched to is drawn, and that is the one: `:OllieFork` typed while a picked session loaded forked the one left.
---@param fn fun(session: string)
---@param failed fun(why: string)|nil
function Chat:with_session(fn, failed)
  if self.redrawing and self.redrawing.held then
    table.insert(self.redrawing.then_run, function(why) -- (release has said why)
      if not why then
        self:with_session(fn, failed)
      elseif failed then
        failed(why)
      end
    end)
    return
  end
  if self.session then
    return fn(self.session)
  end
  table.insert(self.waiting, { fn, failed })
  if #self.waiting > 1 then
    return
  end
  -- A named chat has a session of its own, titled with its name (the sessions picker shows it so).
  local method = (default_claimed or self.name) and "ollie/session/new" or "ollie/state"
  default_claimed = default_claimed or not self.name
  local params = self.name and { title = self.name } or vim.empty_dict()
  client.request(method, params, function(err, res)
    local waiting = self.waiting
    self.waiting = {}
    if err == client.GONE and client.restarting() then
      -- Asked of the daemon a restart stopped: asked again of the fresh one (the chat said the daemon stopped, after
      -- the restart it was in, and stayed "restarting"); the fresh daemon's default session is still to claim.
      default_claimed = default_claimed and method ~= "ollie/state"
      for _, cb in ipairs(waiting) do
        self:with_session(cb[1], cb[2])
      end
      return
    end
    if err or not res then
      -- No daemon (not installed, it would not start): the default session is still the next try's to claim.
      default_claimed = default_claimed and not (err and err.unsent and method == "ollie/state")
      local why = err and err.unsent and M.unstarted(err_text(err)) or err_text(err)
      local told = vim.tbl_filter(function(cb) return cb[2] end, waiting)
      if #told == 0 then
        self:tell(why)
      end
      for _, cb in ipairs(told) do
        cb[2](why) -- (a prompt's says it, put back)
      end
      return
    end
    -- A session picked meanwhile (:OllieSessions as the chat opens) stays the chat's.
    if not self.session then
      self:set_session(res.session)
      if method == "ollie/state" then
        first_chat = self
        M.on_state(res)
        -- The daemon's default session may be one it resumed at start: what it had queued when an editor before
        -- quit during a turn is queued again, as for a session switched to.
        self:restore_queue()
      end
      require("ollie.backend").check(self, method == "ollie/state" and res or nil)
    end
    for _, cb in ipairs(waiting) do
      cb[1](self.session)
    end
  end)
end

---Bind the chat to a session.
---@param session string
function Chat:set_session(session)
  if session ~= self.session then
    self.title, self.steps_running = "", {} -- until the daemon says the new session's
    self:set_plan({})
  end
  self.session = session
end

---Send what is typed in the input area: a prompt (queued while a turn runs), a command, or an inject.
---@param how "send"|"inject"
function Chat:send_input(how)
  local text = input.text(self.input_buf)
  if text == "" then
    if self.queue_held and how == "send" then
      self:run_queue()
    end
    return
  end
  if how == "inject" and self.running and not text:match("^[/!]") then
    if self:inject(text) then
      input.clear(self.input_buf)
    end
  elseif text:match("^/queued%s+pop%s*$") then
    self:pop_queued() -- back in the input, not only said
  elseif text:match("^[/!]") then
    self:command(text)
    input.clear(self.input_buf)
  elseif self:submit(text, vim.list_extend({}, self.kept or {})) then
    self.kept = nil -- gone with it
    input.render_kept(self.input_buf, nil)
    input.clear(self.input_buf)
  end
end

---The prompt's `#` tags made into contexts (the text with each tag as its label); nil when one could not be read
---(said in the transcript).
---@param text string
---@return string|nil clean, ollie.Context[] contexts
function Chat:tags(text)
  local file_win = self:file_win()
  local origin = file_win and vim.api.nvim_win_get_buf(file_win) or nil
  local clean, tagged, err = context.parse(text, origin)
  if err then
    self.transcript:aside("error: " .. err, "OllieError")
    return nil, {}
  end
  return clean, tagged
end

---Why no daemon had what the user sent: `err`, and what starts one.
---@param err string
---@return string
function M.unstarted(err)
  return err .. "\nOnce that is fixed, send a prompt: it starts the daemon."
end

---Say why the chat has no daemon (none would start, or it refused the session), unless the chat said just that last:
---each try (the chat opened again, a prompt sent) stacked the same lines.
---@param why string
function Chat:tell(why)
  local told = self.told
  if not (told and told.why == why and told.row == self.transcript:count()) then
    self.transcript:note("error: " .. why, "OllieError")
    self.told = { why = why, row = self.transcript:count() }
  end
end

---A prompt no daemon had, drawn from `row` on: back in the input, `why` said under it. When the chat said just that
---last as the prompt was drawn (`told`), the prompt is taken off the transcript again, with what its try said, and one
---line under `why` counts the tries (each try stacked the prompt and the same error).
---@param row integer
---@param typed string
---@param given ollie.Context[]
---@param why string
---@param told {why: string, row: integer, tries: integer|nil}|nil
function Chat:unsent(row, typed, given, why, told)
  self.running, self.state = false, "idle"
  if told and told.why == why and told.row == row then
    told.tries = (told.tries or 1) + 1
    self.transcript:cut_from(told.tries > 2 and told.row - 1 or row) -- (the last try's line goes too)
    self.transcript:note(("(the same again, try %d: not sent, it is back in the input)"):format(told.tries),
      "OllieError")
    told.row, self.told = self.transcript:count(), told
    return self:refill(typed, given)
  end
  self:put_back(typed, given, why)
  self.transcript:turn_end("error")
  self.told = { why = why, row = self.transcript:count() }
end

---Put what was typed back in the input, `given` (the contexts its text does not say) kept with it.
---@param typed string
---@param given ollie.Context[]
function Chat:refill(typed, given)
  input.append(self.input_buf, typed)
  if #given > 0 then
    self.kept = given
    input.render_kept(self.input_buf, given)
  end
end

---Put a prompt that was not sent back in the input, `given` (the contexts its text does not say) kept with it.
---@param typed string what was typed, `#` tags and all
---@param given ollie.Context[]
---@param why string|nil the error, said before
---@param kind "queued"|"injected"|nil what it was not (default: sent); said above an answer still streaming (T:aside)
function Chat:put_back(typed, given, why, kind)
  local labels = context.labels(given)
  local say = (why and ("error: " .. why .. " ") or "") .. "(not " .. (kind or "sent") .. ": it is back in the input"
    .. (#labels > 0 and (", with " .. table.concat(labels, ", ")) or "") .. ")"
  self.transcript[kind and "aside" or "note"](self.transcript, say, "OllieError")
  self:refill(typed, given)
end

---Send a prompt or a command; `contexts` come with it (plus the prompt's own `#` tags).
---@param text string
---@param contexts ollie.Context[]
---@return boolean sent false when a `#` tag could not be read (said in the transcript)
function Chat:submit(text, contexts)
  if text:match("^[/!]") then
    self:command(text)
    return true
  end
  local clean, tagged = self:tags(text)
  if not clean then
    return false
  end
  local given = vim.list_extend({}, contexts) -- put back with the text, which does not say them
  vim.list_extend(contexts, tagged)
  if client.stopped() then
    client.ensure() -- the restart it asks for holds this prompt until the chat is drawn from the fresh daemon
  end
  if self.redrawing then
    -- Sent once the chat is drawn; put back when no daemon came to draw it (a restart that failed).
    table.insert(self.redrawing.then_run, function(failed)
      if failed then
        self:put_back(text, given)
      else
        self:submit(clean, contexts)
      end
    end)
    return true
  end
  if self.running or self.queue_held then
    local typed = { text = text, given = given }
    if self.running then
      self:queue(clean, contexts, nil, typed)
    else -- behind the held ones, which run first (not past them)
      self:send_behind(clean, contexts, typed)
    end
    return true
  end
  local labels, told = context.labels(contexts), self.told
  local row = self.transcript:prompt(clean, labels)
  self.tail = { prompt = clean, labels = labels, parts = {} }
  -- Until the daemon says it is thinking (its first start takes seconds) the statusline says the prompt is on its way.
  self.running, self.state = true, "sending"
  vim.cmd("redrawstatus")
  context.attach(contexts)
  self:with_session(function(session)
    turns.note(session, clean)
    -- Another tab showing this session streams the answer too: it shows the prompt as well.
    for _, other in ipairs(M.all_by_session(session)) do
      if other ~= self then
        other.transcript:prompt(clean, labels)
        other.running = true
      end
    end
    local params = { session = session, text = clean, context = context.wire(contexts),
                     images = context.images(contexts) }
    local seen = client.seen(session)
    client.request("ollie/submit", params, function(rerr)
      if not rerr then
        return
      end
      -- No daemon had it, its daemon died before the turn began (no event of it came), or it refused it for the images
      -- its sessions hold (-32010): nothing of it ran or was saved. What was typed goes back in the input, `#` tags and
      -- all, with the contexts it came with.
      local unsent = rerr.unsent or rerr.code == -32010 or (rerr == client.GONE and client.seen(session) == seen)
      self.running, self.state = false, "idle"
      if self.redrawing then
        -- Its daemon died and is restarted: the chat drawn anew says so, then (before, its drawing wiped it) that the
        -- prompt is back in the input.
        if unsent then
          table.insert(self.redrawing.then_run, function()
            self:put_back(text, given, rerr ~= client.GONE and err_text(rerr) or nil)
          end)
        end
        return
      end
      if unsent then
        return self:unsent(row, text, given, err_text(rerr), told)
      end
      self.transcript:note("error: " .. err_text(rerr), "OllieError")
      self.transcript:turn_end("error")
    end)
  end, function(why) -- no session: no daemon to send it to
    self:unsent(row, text, given, why, told)
  end)
  return true
end

-- Slash commands that cut or restore the conversation (the chat re-renders it from the daemon's history): `/agent
-- name` too, which clears the session (the old conversation stayed in sight, as if the model still had it).
local REDRAWS = { ["/rewind"] = true, ["/clear"] = true }

---Whether `line`, which said `output`, is a slash command after which the chat shows the conversation anew. A switch
---to an agent the user did not allow cleared nothing: its redraw wiped the "rejected: switch to agent ..." line.
---@param line string
---@param output string
---@return boolean
local function redraws(line, output)
  local name, arg = line:match("^(/%S+)%s*(.-)%s*$")
  return REDRAWS[name] or (name == "/agent" and arg ~= "" and output:find("(session cleared;", 1, true) ~= nil)
end

---Run a slash command (or `!shell`) at once, also during a turn; its output shows once, in the transcript.
---@param line string
function Chat:command(line)
  self:with_session(function(session)
    self.transcript:aside("› " .. line, "OllieCommand") -- (not before: a switch's drawing would wipe it)
    self.commands_running = (self.commands_running or 0) + 1
    client.request("ollie/command", { session = session, line = line }, function(err, res)
      self.commands_running = self.commands_running - 1
      local output = res and res.output or ""
      -- The daemon also publishes a command's output as an `info` event: show it once.
      local shown = self.command_info[vim.trim(output)]
      self.command_info[vim.trim(output)] = nil
      if line:match("^/queued") then
        self:sync_queue()
      end
      -- A command that failed (its text came as an `error` event) cut nothing: no redraw, which lost the notes.
      if not err and not res.error and shown ~= "error" and redraws(line, output) and not self.running then
        -- The conversation was cut or restored: the chat shows it anew, then the command and what it said.
        return self:switch(session, function()
          self.transcript:note("› " .. line, "OllieCommand")
          if output ~= "" then
            self.transcript:note(output)
          end
        end)
      end
      if err then
        self.transcript:aside("error: " .. err_text(err), "OllieError")
      elseif (not shown or shown == "exec") and output ~= "" then
        self.transcript:aside(output, res.failed and "OllieToolFailed" or nil) -- a `!cmd` that failed as a failed step
        if res.error then
          self.transcript:aside("error: " .. res.error, "OllieError")
        end
      end
    end)
  end)
end

---Interrupt the running turn: while a switch is in flight, the session switched to's (it went to the one left).
function Chat:stop()
  if self.session or self.redrawing and self.redrawing.held then
    self:with_session(function(session)
      client.request("ollie/interrupt", { session = session, reason = "user" }, function() end)
    end)
  end
end

---A step changed a file under the user's unsaved buffer (behind.py's notice): said in the chat, and by vim.notify too
---(once per file) when the chat is not in sight, so a user with it closed learns it before saving over the change.
---@param content string
function Chat:tell_behind(content)
  local path = content:match("^warning: (.-) has unsaved changes in the editor, and this step changed the file on disk")
  if not path or self.behind_told[path] or (self:windows() and self.tab == vim.api.nvim_get_current_tabpage()) then
    return
  end
  self.behind_told[path] = true
  requests.notify((content:gsub("^warning: ", "")), vim.log.levels.WARN)
end

---Render one `ollie/event` of this chat's session.
---@param ev table
---@param drawn boolean|nil the history drawn just now shows it already (a turn's end held while the chat was redrawn)
function Chat:on_event(ev, drawn)
  self:revive()
  if self.redrawing then
    table.insert(self.redrawing.events, ev)
    return
  end
  local t, role, content = self.transcript, ev.role, ev.content or ""
  local tail = self.tail
  -- A model request that failed leaves no answer: retried (`limitretry`) or given up (the `error` ending the turn names
  -- its kind), the words it streamed go (given up, they stayed above the error, though the session never kept them).
  if role == "limitretry" or (role == "error" and ev.name and (self.commands_running or 0) == 0) then
    t:drop_attempt()
    if tail then
      tail.parts = {}
    end
  end
  -- A failed request's wait before its retry: the statusline counts it down (it said "thinking" meanwhile).
  local of, wait = content:match("; retry (%d+/%d+) in ([%d.]+)s$")
  wait = role == "limitretry" and tonumber(wait)
  local what = (ev.name == "rate_limit" and "rate limited" or "the request failed") .. ", retry " .. (of or "")
  self.retry = wait and { what = what, till = vim.uv.now() + wait * 1000 } or nil
  if wait then
    local timer = assert(vim.uv.new_timer())
    timer:start(1000, 1000, vim.schedule_wrap(function()
      vim.cmd("redrawstatus!") -- every window's: the chat's is seldom the current one
      if (not self.retry or self.retry.till <= vim.uv.now()) and not timer:is_closing() then
        timer:close()
      end
    end))
  end
  if role == "assistant" or role == "reasoning" then
    t:stream(role, content)
    local last = tail and tail.parts[#tail.parts]
    if last and last.role == role then
      last.text = last.text .. content
    elseif tail then
      table.insert(tail.parts, { role = role, text = content })
    end
  elseif role == "call" or role == "step" or role == "tool" then
    if tail then -- its round is saved with its steps: what shows from here is not yet
      tail.prompt, tail.parts = nil, {}
    end
    t:tool_event(ev)
    self:note_running(ev)
    if role == "tool" then
      self:injected_taken()
      if config.options.reload_changed then
        local diffs = {}
        for _, c in ipairs({ ev.tool or {}, unpack(ev.steps or {}) }) do
          vim.list_extend(diffs, type(c.diffs) == "table" and c.diffs or {})
        end
        requests.follow_moves(diffs)
        requests.checktime()
      end
    end
  elseif role == "user" then
    local labels, text = context.split_prompt(content)
    turns.note(self.session, text)
    -- Shown with its images' labels: those this chat queued it with, else (another window's) what the event names.
    local queued = t:settle("queued", text)[1]
    labels = queued and queued.labels or vim.list_extend(labels, render.image_labels(ev.images))
    t:prompt(text, labels)
    self.tail = { prompt = text, labels = labels, parts = {} }
  elseif role == "error" or role == "info" or role == "exec" then
    -- A command's answer, of the user's doing, goes above an answer's line still streaming (T:aside).
    local command = (self.commands_running or 0) > 0
    local say = command and t.aside or t.note
    if role == "error" then
      if command then
        self.command_info[vim.trim(content)] = "error" -- a command's error is also its answer: shown once, here
      end
      local said = require("ollie.backend").turn_error(self, content) or ("error: " .. content)
      if tail and not command then -- the history keeps no error: a redraw (:OllieRestart) says it again from here, in
        -- the daemon's own words (a "see above" would point at a note the redraw no longer shows)
        self.failed = { prompt = tail.prompt, error = "error: " .. content }
      end
      return say(t, said, "OllieError")
    end
    if command then
      self.command_info[vim.trim(content)] = role == "exec" and "exec" or true
      if role == "exec" then
        return -- drawn with the command's answer, which says whether it failed
      end
    end
    say(t, content)
    if role == "info" then
      self:tell_behind(content)
    end
  elseif role == "limitretry" then
    -- Its content says what failed in the daemon's words (a rate limit, a server's HTTP 503), as the terminal shows it.
    t:note("retrying: " .. content, "OllieTurnEnd")
  elseif role == "turn" then
    if content == "start" then
      self.running, self.failed = true, nil
    else
      -- stateChanged says so too; this keeps Enter from queueing behind a turn that has ended.
      self.running, self.state, self.steps_running, self.tail = false, "idle", {}, nil
      -- Injects no tool result took are the daemon's next prompt now (held after a stop): not shown as taken.
      local untaken = #t:settle("injected")
      -- A question the daemon asked during the turn waits no more: its float and picker go.
      local permission = package.loaded["ollie.permission"]
      for _, title in ipairs(permission and permission.withdraw(self.session) or {}) do
        t:note("question withdrawn (the turn ended): " .. title, "OllieTurnEnd")
      end
      if not drawn then -- else the history drew the turn, its changes line from the same `turnChanges`
        t:turn_changes(ev.turnChanges)
        t:turn_end(content)
      end
      if self.redraw_at_end then
        self.redraw_at_end = false
        self:redraw(nil, content)
      end
      if untaken > 0 or #vim.tbl_filter(function(p) return p.kind == "queued" end, t.pending) > 0 then
        self:sync_queue() -- a stop holds them; else the next one starts now
      end
    end
  end
end

---Note the steps that run, by their titles: the statusline names the last begun (`Run pytest`), not the tool the
---model called (`calling: execute_code`).
---@param ev table a `call`, `step` or `tool` event
function Chat:note_running(ev)
  local tool = ev.tool
  if type(tool) ~= "table" or tool.id == nil then
    return
  end
  self.steps_running = vim.tbl_filter(function(s) return s.id ~= tool.id end, self.steps_running)
  if ev.role ~= "tool" and type(tool.title) == "string" then
    table.insert(self.steps_running, { id = tool.id, title = tool.title })
  end
  requests.redraw_status()
end

local redraw_due = false

---Show what changed also while the user types a command line: Neovim redraws no window in command-line mode, so the
---chat stood still (the answer, its steps, its end) until the `:` line was done. One redraw per 50 ms at most.
local function redraw_in_cmdline()
  if redraw_due or requests.over_messages() or vim.api.nvim_get_mode().mode ~= "c" then
    return
  end
  redraw_due = true
  vim.defer_fn(function()
    redraw_due = false
    if vim.api.nvim_get_mode().mode == "c" then
      pcall(vim.cmd.redraw) -- a redraw only: never an error where the editor cannot draw now
    end
  end, 50)
end

---Route an `ollie/event` to the chat of its session.
---@param ev table
function M.on_event(ev)
  if ev.role == "user" then -- a queued prompt's turn started: it is saved for a next editor no more
    savedqueue.take(ev.session, select(2, context.split_prompt(ev.content or "")))
  end
  for _, chat in ipairs(M.all_by_session(ev.session)) do
    chat:on_event(ev)
  end
  redraw_in_cmdline()
end

---Its daemon died: each chat keeps what its running turn showed and no daemon saved (drawn again, cut short, under
---the history the next daemon reads back).
function M.daemon_died()
  -- Its questions go too: an answer would reach no daemon, and a float left up after the restart read as still asked.
  local permission = package.loaded["ollie.permission"]
  if permission then
    permission.withdraw(true)
  end
  for _, chat in ipairs(every) do
    chat.lost_turn = chat.running
    if chat.running and chat.tail and #chat.tail.parts > 0 then
      chat.cut_short = chat.tail
    end
    chat.tail = nil
  end
end

---Route an `ollie/stateChanged` (or an `ollie/state` answer) to the chat of its session.
---@param p table
function M.on_state(p)
  for _, chat in ipairs(M.all_by_session(p.session)) do
    chat.running = p.running
    chat.state = p.state or chat.state
    if type(p.cost) == "table" then
      chat.cost = p.cost.session or chat.cost
    end
    if type(p.title) == "string" then
      chat.title = p.title
    end
    chat:set_plan(p.plan)
  end
  requests.redraw_status() -- every window's: the transcript's too while the cursor is in the code
  redraw_in_cmdline()
end

-- Remember each tab's last file window: #buffer, #selection and step locations go there.
vim.api.nvim_create_autocmd("WinEnter", {
  group = vim.api.nvim_create_augroup("ollie_chat", { clear = true }),
  callback = function()
    local chat = M.chats[vim.api.nvim_get_current_tabpage()]
    local win = vim.api.nvim_get_current_win()
    if chat and chatwin.is_file_win(win) then
      chat.origin_win = win
    end
  end,
})
-- :OllieRewind cut the conversation back: the chat of that session shows what is left of it.
vim.api.nvim_create_autocmd("User", {
  group = "ollie_chat",
  pattern = "OllieRewind",
  callback = function(a)
    local session = type(a.data) == "table" and a.data.session or nil
    local chats = session and M.all_by_session(session) or { M.chats[vim.api.nvim_get_current_tabpage()] }
    local note = type(a.data) == "table" and a.data.note or nil
    for _, chat in ipairs(chats) do
      if chat.session then
        chat:switch(chat.session, note and function() chat.transcript:note(note, "OllieTurnEnd") end)
      end
    end
  end,
})
-- Quitting (chatwin.lua): `:q`, `:q!`, `:close` of one chat window take the other with it; `:q` in the tab's last
-- code window takes the chat too.
vim.api.nvim_create_autocmd("QuitPre", {
  group = "ollie_chat",
  callback = function()
    local chat = M.chats[vim.api.nvim_get_current_tabpage()]
    if chat then
      chat:quit_pre()
    end
  end,
})
-- `:qa` with a prompt typed and not sent: kept as the session's draft, shown again when the session is (restore_queue).
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = "ollie_chat",
  callback = function()
    for _, chat in ipairs(M.every()) do
      chat:save_draft() -- what the last change's save waits to write
    end
    savedqueue.quitting()
  end,
})
vim.api.nvim_create_autocmd("WinClosed", {
  group = "ollie_chat",
  callback = function(a)
    local win = tonumber(a.match) --[[@as integer]]
    if vim.v.exiting ~= vim.NIL or not vim.api.nvim_win_is_valid(win) then
      return
    end
    local chat = M.chats[vim.api.nvim_win_get_tabpage(win)]
    local quit = chat ~= nil and a.buf == chat.quitting
    if chat and (quit or a.buf == chat.transcript.buf or a.buf == chat.input_buf) then
      -- Not from here: the window is still in the layout while this runs.
      vim.schedule(function()
        chat:half_closed(quit)
        chat:draw_plan() -- over the transcript that is left, or gone with it
      end)
    elseif chat then
      chat:keep_input_height()
    end
  end,
})
-- A resized terminal (80×24 after 160×40): each tab's chat gets its width again, the code keeping half.
vim.api.nvim_create_autocmd("VimResized", {
  group = "ollie_chat",
  callback = function()
    for _, chat in pairs(M.chats) do
      chat:fit()
    end
  end,
})
-- A chat window resized (by hand, by the terminal, by a tabline or a split): its plan's float keeps to its corner, its
-- transcript at its end shows its end.
vim.api.nvim_create_autocmd("WinResized", {
  group = "ollie_chat",
  callback = function()
    for _, chat in pairs(M.chats) do
      chat:draw_plan()
      chat:keep_end(vim.v.event.windows)
    end
  end,
})
vim.api.nvim_create_autocmd("TabClosed", {
  group = "ollie_chat",
  callback = function()
    for tab in pairs(M.chats) do
      if not vim.api.nvim_tabpage_is_valid(tab) then
        M.chats[tab] = nil
      end
    end
  end,
})

-- The window methods (open, close, focus_input, windows, open_location, quitting) live in chatwin.lua, the
-- waiting prompts' (queue, inject, their sync with the daemon) in pending.lua, drawing a saved conversation anew
-- (switch, redraw) in history.lua, the plan's float in plan.lua.
for _, methods in ipairs({ chatwin.methods, require("ollie.pending").methods, require("ollie.history").methods,
  require("ollie.plan").methods }) do
  for name, fn in pairs(methods) do
    Chat[name] = fn
  end
end

M.Chat = Chat
return M
