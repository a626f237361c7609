-- ollie.nvim: a client of ollie-lsp. The daemon does the work; this makes it feel native.
-- Every command is async: requests answer to callbacks, and nothing waits on the editor's main loop.
local chat = require("ollie.chat")
local client = require("ollie.client")
local config = require("ollie.config")
local context = require("ollie.context")
local render = require("ollie.render")
local requests = require("ollie.requests")

local M = {}

-- Through requests.notify: a long daemon error (-32007 "session is live elsewhere: ...") shows on one line,
-- cut to fit, rather than stopping the editor at a "Press ENTER" prompt.
local notify = requests.notify
-- Where a daemon that cannot start is told whole (its notice is cut to the command line's width).
local HEALTH = ":checkhealth ollie"
local err_text = requests.err_text
-- Why the daemon that keeps dying died, as said last (until :OllieRestart, or one that ran dies): each try's start dies
-- the same way, said once; a chat opened meanwhile says it.
---@type string|nil
local told_died = nil

client.listeners["ollie/event"] = chat.on_event
client.listeners["ollie/stateChanged"] = chat.on_state
render.highlights()

---Configure ollie.nvim (optional: defaults work). A bad option is told once, by name, and left at its default.
---@param opts ollie.Config|nil
function M.setup(opts)
  local _, problems = config.set(opts)
  if #problems > 0 then
    notify("setup: " .. table.concat(problems, "; "), vim.log.levels.WARN)
  end
  require("ollie.tabline").setup()
  local group = vim.api.nvim_create_augroup("ollie", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = render.highlights })
  if config.options.attach_buffers then
    vim.api.nvim_create_autocmd("BufEnter", {
      group = group,
      callback = function(a)
        if client.get() then
          client.attach(a.buf)
        end
      end,
    })
  end
end

---Start the daemon if it is not running; false and why (told) when it cannot start.
---@return boolean, string|nil
local function started()
  if client.stopped() then
    return true -- (the first request restarts it: opening the chat started one, and the prompt sent there another)
  end
  local _, err = client.ensure()
  if err then
    notify(err, vim.log.levels.ERROR, HEALTH)
  end
  return not err, err
end

---The chat of the current tabpage, with its daemon started; nil (after telling the user) when it can't, unless
---`anyway`: then the chat opens all the same, saying why there is no daemon, and what is typed there waits in its input
---(sent again, it starts the daemon). Before, no chat opened, and the prompt typed next went into the code as keys.
---@param focus boolean|nil move the cursor into the input area, in insert mode (ready to type, as avante and
---CopilotChat are); else the chat opens with the cursor where it was
---@param anyway boolean|nil
---@return ollie.Chat|nil
local function ensure(focus, anyway)
  local up, err = started()
  if not up and not anyway then
    return nil
  end
  local c = chat.get(true) --[[@as ollie.Chat]]
  -- Every chat says why there is no daemon as it opens, a named one too (before, the first only).
  local why = err and chat.unstarted(err) or not c.told and client.stopped() and told_died
  if why then
    c:tell(why)
  end
  if focus then
    c:focus_input(true)
  else
    c:open(false)
  end
  return c
end

---The chat of the current tabpage (nil before the first use there).
---@return ollie.Chat|nil
function M.current()
  return chat.get(false)
end

---The session the current tabpage's chat shows (nil before it has one).
---@return string|nil
function M.current_session()
  local c = chat.get(false)
  return c and c.session or nil
end

---Send a prompt (or a slash command) to the current tab's chat.
---@param text string
---@param range {line1: integer, line2: integer}|nil lines of the current buffer to send as context
function M.ask(text, range)
  local contexts = {}
  local buf = vim.api.nvim_get_current_buf()
  local from_file = require("ollie.chatwin").is_file_win(vim.api.nvim_get_current_win())
  if range then
    table.insert(contexts, context.range(buf, range.line1, range.line2))
  end
  local prompt = vim.trim(text or "")
  local c = ensure(prompt == "", true)
  if c and prompt ~= "" then
    c:submit(prompt, contexts)
  elseif c and range and from_file then
    -- No question yet (`:'<,'>Ollie`): the lines wait in the input as `#selection` while the user types it.
    -- Before, they were dropped.
    vim.api.nvim_buf_set_mark(buf, "<", range.line1, 0, {})
    vim.api.nvim_buf_set_mark(buf, ">", range.line2, 0, {})
    require("ollie.input").append(c.input_buf, "#selection ")
    c:focus_input(true)
  end
end

---Attach an image to the prompt being typed: `path`, else one picked from the image files under the working
---directory; it waits in the chat's input as `#file:path` (sent with the prompt, as an image).
---@param path string|nil
function M.image(path)
  local function attach(picked)
    local c = ensure(true, true)
    if c and picked then
      require("ollie.input").append(c.input_buf, "#file:" .. vim.fn.fnamemodify(picked, ":.") .. " ")
      c:focus_input(true)
    end
  end
  if path and path ~= "" then
    return attach(path)
  end
  local found = vim.fs.find(function(name) return context.is_image(name) end,
    { path = vim.fn.getcwd(), type = "file", limit = 200 })
  if #found == 0 then
    vim.notify("ollie: no image files (.png, .jpg, .gif, .webp) under " .. vim.fn.getcwd(), vim.log.levels.WARN)
    return
  end
  vim.ui.select(found, { prompt = "Image for the prompt",
    format_item = function(item) return vim.fn.fnamemodify(item, ":.") end }, attach)
end

---Open the chat and go to its input area, in insert mode; with a name, the named chat (made when new) in this tab.
---@param name string|nil
function M.open_chat(name)
  if name and name ~= "" then
    chat.show_named(name)
  end
  ensure(true, true)
end

---Interrupt the running turn.
function M.stop()
  local c = chat.get(false)
  if c then
    c:stop()
  end
end

---`fn()` once the chat shows its session (requests.when_drawn): whether the session picked as `:OllieQueue` was typed
---runs a turn decides what `fn` sends (it went by the one left, running: queued in the idle one picked, it waited
---there for a turn that never came). `text` is back in the input when no daemon came to draw it.
---@param c ollie.Chat
---@param text string
---@param fn fun()
local function when_drawn(c, text, fn)
  requests.when_drawn(function(why)
    if why then
      c:put_back(text, {})
    else
      fn()
    end
  end)
end

---Add text (with the contexts of its `#` tags) to the running turn's next tool result. With none running it is sent
---as a prompt, as `<C-j>` in the input sends it: injected or queued, it waited in an idle chat for nothing.
---@param text string
function M.inject(text)
  local c = ensure()
  if c then
    when_drawn(c, text, function()
      if c.running then
        c:inject(text)
      else
        c:submit(text, {})
      end
    end)
  end
end

---Queue a prompt (with the contexts of its `#` tags) to run after the current turn; with none (nor prompts a stop
---held) it runs now.
---@param text string
function M.queue(text)
  local c = ensure()
  if c then
    when_drawn(c, text, function()
      if not (c.running or c.queue_held) then
        return c:submit(text, {})
      end
      local clean, contexts = c:tags(text)
      if clean then
        c:queue(clean, contexts, nil, { text = text, given = {} }) -- refused or taken back: as typed
      end
    end)
  end
end

---How a loaded session's last turn ended (ollie/session/load's `info.lastTurnResult`), for its redraw.
---@param res table|nil
---@return string|nil
local function last_result(res)
  local info = type(res) == "table" and res.info or nil
  return type(info) == "table" and type(info.lastTurnResult) == "string" and info.lastTurnResult or nil
end

---Switch chat `c` to the session `method` answers with (its `session`, else `id`). What is typed meanwhile waits
---until that session is drawn, and goes there: a prompt typed right after :OllieNew ran in the session left, out of
---sight, and the chat then showed the new one empty. Refused, the chat is drawn again and the prompts go on in it.
---@param c ollie.Chat
---@param method string
---@param params table
---@param id string|nil
---@param note (fun(res: table): string|nil)|nil what the chat says once it shows the session (nil: nothing)
local function switch_by(c, method, params, id, note)
  c:hold()
  client.request(method, params, function(err, res)
    if err == client.GONE or (err and err.unsent) then
      return -- its daemon died: the restart draws the chat again (or lets what waits go back in the input)
    elseif err then
      notify(err_text(err), vim.log.levels.WARN)
      return c:redraw()
    end
    local said = note and note(res)
    c:switch(id or res.session, said and function() c.transcript:note(said, "OllieTurnEnd") end, last_result(res))
  end)
end

---Start a new session in this tab's chat.
function M.new_session()
  local c = ensure()
  if not c then
    return
  end
  switch_by(c, "ollie/session/new", vim.empty_dict())
end

---Switch this tab's chat to a saved session (resumed in the daemon first).
---@param id string
function M.load_session(id)
  local c = ensure()
  if not c then
    return
  end
  -- A session a rewind emptied is listed for its undo (pickers.session_label): the chat says how.
  switch_by(c, "ollie/session/load", { session = id }, id, function(res)
    return type(res.info) == "table" and res.info.rewindUndo == true
      and ":OllieRewind undo puts back what this session's last rewind took (its turns and files)" or nil
  end)
end

---:OllieFork [turn]: a new session that goes on from a copy of this chat's conversation, up to the end of turn
---`turn` (default: all of it); the chat switches to it, the session it came from stays listed (and open). The files in
---the workspace stay as they are (:OllieRewind takes them back).
---@param arg string|nil
function M.fork(arg)
  local c = ensure()
  if not c then
    return
  end
  local turn = nil
  if arg and arg ~= "" then
    turn = tonumber(arg) or arg -- not a number: the daemon says what is wrong with it (-32602 naming `turn`)
  end
  c:with_session(function(session)
    -- Said in the chat: its statusline cut the title's "(fork)" off at 80 columns, and nothing else told the fork.
    switch_by(c, "ollie/session/fork", { session = session, turn = turn }, nil, function(res)
      local title = type(res.info) == "table" and res.info.title
      local upto = turn and ("up to turn " .. tostring(turn)) or "whole"
      return ("this chat is now %s, with the conversation %s; the one it came from is in :OllieSessions. Files were "
        .. "not changed: they stay as they are now%s"):format(
        type(title) == "string" and title ~= "" and ('"' .. title .. '"') or "a fork", upto,
        turn and (", not as they were after turn " .. tostring(turn)) or "")
    end)
  end)
end

---Pick a saved session (lua/ollie/pickers.lua: vim.ui.select, async) and switch this tab's chat to it; "Show
---archived…" offers the archived ones, to unarchive and resume. The picker shows over the user's layout: the chat
---opens once a session is picked (an empty chat opened behind it, and stayed when the picker was dismissed).
function M.pick_session()
  if started() then
    require("ollie.pickers").sessions(function(info)
      if info then
        M.load_session(info.id)
      end
    end, { offer_archived = true })
  end
end

---Show or switch the model or agent: with a name at once, else picked from the daemon's list.
local function show_or_pick(kind, name)
  local c = ensure()
  if not c then
    return
  end
  if name and name ~= "" then
    return c:command("/" .. kind .. " " .. name)
  end
  -- The picker asks about the chat's session: make sure it has one first.
  c:with_session(function()
    require("ollie.pickers")[kind .. "s"](function(choice)
      if choice then
        c:command("/" .. kind .. " " .. choice)
      end
    end)
  end)
end

---Show or switch the model (no name: pick from the backend's list).
---@param name string|nil
function M.model(name)
  show_or_pick("model", name)
end

---Show or switch the agent (no name: pick from the agent configs).
---@param name string|nil
function M.agent(name)
  show_or_pick("agent", name)
end

---Compact the session's context.
function M.compact()
  local c = ensure()
  if c then
    c:command("/compact")
  end
end

---The chats showing a session, by session, each holding what is typed until it is drawn again (or let go).
---@return table<string, ollie.Chat[]>
local function hold()
  local chats, seen = {}, {}
  for _, group in ipairs({ chat.chats, chat.named }) do
    for _, c in pairs(group) do
      if c.session and not seen[c] then
        seen[c] = true
        chats[c.session] = chats[c.session] or {}
        table.insert(chats[c.session], c)
        c:hold()
      end
    end
  end
  return chats
end

-- The restart under way, from its stop until its chats have their sessions again: a second :OllieRestart joins it.
-- (Before, a user pressing it twice had every session loaded twice, what the old daemon held back in the input twice.)
---@type table|nil
local restarting = nil

---Start the next daemon (the old one stopped first) and show each chat's session again from it; `crash` (why the
---last one died) is said in each chat under its conversation.
---@param crash string|nil
local function resume(crash)
  local this, loading = {}, 0
  restarting = this
  local function settled()
    restarting = (loading > 0 or restarting ~= this) and restarting or nil
  end
  -- A fresh daemon starts with no queue: what a Restart's had queued is forgotten, what a dead one's had comes back.
  require("ollie.pending")[crash and "carry" or "forget"]()
  -- A prompt typed before its session is loaded in the fresh daemon and drawn waits (the switch's redraw sends it):
  -- sent at once, it reached a daemon without the session, and the redraw wiped the error: the prompt vanished.
  -- The prompts waiting in the old daemon (queued, held, injected and not taken yet) end with it: each goes back in
  -- its chat's input once the chat is drawn again (before, they vanished without a word).
  -- (After a crash they come back held instead: pending.carry.)
  -- Each chat says so until its session is loaded again (before, the old daemon's "thinking" stayed for seconds).
  for _, c in ipairs(chat.every()) do
    c.state = "restarting"
  end
  pcall(vim.cmd.redrawstatus, { bang = true })
  local waiting = {}
  for _, list in pairs(hold()) do
    for _, c in ipairs(list) do
      waiting[c] = not crash and vim.tbl_map(function(p) return p.prompt end, c.transcript.pending) or nil
    end
  end
  client.restart(function(err)
    for session, list in pairs(hold()) do -- held anew: the old daemon's last events went with it
      for _, c in ipairs(list) do
        for _, text in ipairs(waiting[c] or {}) do
          c:back_in_input(text, "the restart ended the daemon it waited in")
        end
      end
      if err then
        -- No daemon: what was typed meanwhile goes back in the input (it waited, neither sent nor put back).
        for _, c in ipairs(list) do
          c:release(err .. "; once that is fixed, :OllieRestart")
        end
      else
        loading = loading + 1
        client.request("ollie/session/load", { session = session }, function(load_err, res)
          loading = loading - 1
          settled()
          if load_err == client.GONE or (load_err and load_err.unsent) then
            -- It died too: on_died restarts it again or lets the chats go (a redraw here started one more daemon).
            return
          elseif load_err then
            notify(err_text(load_err), vim.log.levels.WARN)
          end
          for _, c in ipairs(list) do
            if load_err then
              c:redraw() -- says the error, and lets the held prompts go (to say theirs)
            else
              c:switch(session, crash and function()
                -- "A turn was lost" only where one ran: said of an idle chat, it sent the user looking for one.
                c.transcript:note(crash .. " and was restarted"
                  .. (c.lost_turn and "; a turn it ran was lost: send its prompt again" or ""), "OllieError")
              end, last_result(res))
            end
          end
        end)
      end
    end
    settled()
    if err then
      return notify(err, vim.log.levels.ERROR, HEALTH)
    end
    -- Said once the fresh daemon has come up: said as its process started, it was said of one still starting (or about
    -- to die again).
    client.when_up(function() notify(crash and (crash .. ": restarted it") or "the daemon restarted") end)
  end)
end

---Restart the daemon (after configuring a model or an API key, as VS Code's "Check again"): each chat shows its
---session again, from the fresh daemon. One asked for while another is under way is that one.
function M.restart()
  told_died = nil
  notify(restarting and "a restart is under way: this one joins it" or "restarting the daemon…")
  if restarting then
    return
  end
  resume()
end

-- A prompt sent after the plugin gave up restarting a daemon that kept dying restarts it, unsaid: with the death said
-- after, each try said two lines, which piled up into a hit-enter prompt as the user left insert mode.
client.on_retry = function()
  if not restarting then
    resume()
  end
end

---A daemon died unasked: the chats keep what its running turns showed (cut short), and it is restarted once; one that
---dies again at once is left stopped, said in each chat, what was typed meanwhile back in the input.
---@param why string
---@param restart boolean
client.on_died = function(why, restart)
  chat.daemon_died()
  if restart then
    told_died = nil
    return resume(why)
  end
  for _, c in ipairs(chat.every()) do
    c:release(why)
  end
  local function failure(text) return text and (text:match("^[^)]*%)") or text) end -- "... stopped (exit code 3)"
  if failure(why) ~= failure(told_died) then
    notify(why, vim.log.levels.ERROR)
  end
  told_died = why
end

---A statusline component for the current tab's chat: "ollie: <state> $<cost> · <title>", the title cut to fit.
---Its `%` doubled: the model writes step titles, and a `%!` statusline (lualine's too) reads the text as a format,
---where `%{...}` is an expression Neovim evaluates, unsandboxed.
---@return string
function M.statusline()
  local status, title = require("ollie.chatwin").status(vim.g.statusline_winid or vim.api.nvim_get_current_win())
  return ((title == "" and status or (status .. " · " .. title)):gsub("%%", "%%%%"))
end

return M
