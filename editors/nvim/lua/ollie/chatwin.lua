-- The chat's windows: the transcript with the input area under it, where they open, the input's key hints,
-- closing them, and jumping from a transcript line to what it points at. Methods of ollie.Chat (chat.lua).
local config = require("ollie.config")
local render = require("ollie.render")

local M = {}

---Methods of ollie.Chat, installed by chat.lua.
---@class ollie.ChatWindows
local W = {}
M.methods = W

---Whether a window shows a file (not a chat, a list or a scratch buffer).
---@param win integer
---@return boolean
function M.is_file_win(win)
  local buf = vim.api.nvim_win_get_buf(win)
  return vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= ""
end

---The tab's file window the user was last in (for #buffer, #selection, locations): the one noted, while it still
---shows a file (the chat's own windows open as splits of it, then take their buffers), else the tab's first one.
---@return integer|nil
function W:file_win()
  local win = self.origin_win
  if win and vim.api.nvim_win_is_valid(win) and M.is_file_win(win) and not vim.w[win].ollie_role then
    return win
  end
  for _, w in ipairs(vim.api.nvim_tabpage_is_valid(self.tab) and vim.api.nvim_tabpage_list_wins(self.tab) or {}) do
    if vim.api.nvim_win_get_config(w).relative == "" and M.is_file_win(w) and not vim.w[w].ollie_role then
      self.origin_win = w
      return w
    end
  end
  return nil
end

---The chat's windows in its tab: transcript and input (nil when closed).
---@return integer|nil transcript_win, integer|nil input_win
function W:windows()
  local tw, iw
  if vim.api.nvim_tabpage_is_valid(self.tab) then
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(self.tab)) do
      local buf = vim.api.nvim_win_get_buf(win)
      if buf == self.transcript.buf then
        tw = tw or win
      elseif buf == self.input_buf then
        iw = iw or win
      end
    end
  end
  return tw, iw
end

---The hints of the input keys in `mode` ("n" or "i"), from the config (a key unset in it: the other mode's).
---@param mode "n"|"i"
---@return string[]
local function key_hints(mode)
  local k = config.options.keymaps
  local parts = {}
  for _, item in ipairs({ { "send", "send/queue" }, { "inject", "inject" }, { "stop", "stop" } }) do
    local lhs = k[item[1]] and (k[item[1]][mode] or k[item[1]][mode == "n" and "i" or "n"])
    if lhs then
      table.insert(parts, lhs .. " " .. item[2])
    end
  end
  return parts
end

---Text for a statusline: its `%` doubled.
---@param text string
---@return string
local function esc(text)
  return (text:gsub("%%", "%%%%"))
end

---@class ollie.Bar
---@field label string what always shows (a file's name, "prompt")
---@field tail string|nil after the label, cut at its end to fit (a review's session title)
---@field label_hl string|nil
---@field hint_hl string|nil the hints' group (default Comment)
---@field hints string[] key hints, the most useful first
---@field hints_i string[]|nil those of insert mode, where they differ
---@field sep string|nil between hints (default ", ")
---@field paren boolean|nil the hints in parentheses

---A window's statusline or winbar (`%!`) from its `w:ollie_bar`: the label, then as many key hints as fit, so a
---narrow window drops the last hints whole instead of cutting the label or a hint in half.
---@return string
function M.bar()
  local win = vim.g.statusline_winid or vim.api.nvim_get_current_win()
  local bar = vim.w[win].ollie_bar --[[@as ollie.Bar|nil]]
  if type(bar) ~= "table" then
    return ""
  end
  local sep = bar.sep or ", "
  -- In insert mode (where the chat opens) its own keys: `<CR> send` there typed a line break.
  local insert = win == vim.api.nvim_get_current_win() and vim.api.nvim_get_mode().mode:sub(1, 1) == "i"
  local hints = vim.deepcopy(insert and bar.hints_i or bar.hints or {})
  local label, width = bar.label, vim.api.nvim_win_get_width(win)
  if bar.tail and width - vim.fn.strdisplaywidth(label) > 8 then -- (else the label alone: its start is cut, never it)
    label = label .. render.fit(bar.tail, width - vim.fn.strdisplaywidth(label) - 1)
  end
  local room = width - vim.fn.strdisplaywidth(label) - (bar.paren and 6 or 4)
  while #hints > 0 and vim.fn.strdisplaywidth(table.concat(hints, sep)) > room do
    table.remove(hints)
  end
  label = bar.label_hl and ("%#" .. bar.label_hl .. "# " .. esc(label) .. " %*") or esc(label)
  local text = table.concat(hints, sep)
  if bar.paren then
    text = " (" .. text .. ")"
  end
  return "%<" .. label .. (#hints > 0 and ("%#" .. (bar.hint_hl or "Comment") .. "# " .. esc(text) .. "%*") or "")
end

---A cost in dollars as VS Code and the terminal say it: cents, or 4 places under a cent (`$0.00`, `$0.0012`, `$1.50`).
---@param cost number|nil
---@return string
local function dollars(cost)
  cost = cost or 0
  return string.format(cost > 0 and cost < 0.01 and "$%.4f" or "$%.2f", cost)
end

---What a statusline in `win` shows of the current tab's chat: "ollie: <state> $<cost>", and its session's title as
---the daemon gives it (the first prompt's words once that turn starts, a rename), cut at its end to fit the window
---("" when there is none or no room). The chat's own statusline and the public component both draw this.
---@param win integer
---@return string status, string title
function M.status(win)
  local c, clients = require("ollie.chat").get(false), require("ollie.client")
  local client = clients.get()
  if not c then
    return "", ""
  end
  -- While a question waits the turn waits on the user, not on the model ("thinking" said it was busy). While a step
  -- runs, its title says what runs ("calling: call_tool" named the model's tool).
  local running = c.state:find("^calling:") and c.steps_running[#c.steps_running]
  local left = c.retry and math.ceil((c.retry.till - vim.uv.now()) / 1000) or 0
  -- Until the daemon has answered `initialize` nothing it holds is shown ("idle" over an empty session list). With
  -- none running the statusline says so, as VS Code's does (it said nothing: a chat with no daemon looked idle).
  local state = not client and (clients.restarting() and "restarting" or "stopped")
    or not client.initialized and "starting"
    or require("ollie.permission").asks(c.session) and "waiting for your answer"
    or left > 0 and string.format("%s in %ds", c.retry.what, left)
    or running and vim.fn.strcharpart(running.title:gsub("`", ""), 0, 40) or c.state
  -- The step's title is the model's, the session's title its namer's (a teammate's, shared): a U+202E in either
  -- reversed the rest of the line (a bidi terminal's), so both are drawn escaped.
  local shown = require("ollie.permission").shown_path
  local name, cost = string.format("ollie%s: ", c.name and ("[" .. c.name .. "]") or ""), " " .. dollars(c.cost)
  state = shown(state)
  -- A global statusline (laststatus=3) spans the editor, not the window it names.
  local width = vim.o.laststatus == 3 and vim.o.columns or vim.api.nvim_win_get_width(win)
  -- Past the window's width Neovim cut the line at its start ("<try 1/3 in 5s $0.00" in a 40-column chat): the state
  -- is cut in its middle instead, keeping "ollie: " and the countdown, the cost dropped where it would crowd the state.
  local room = width - 1 - vim.fn.strdisplaywidth(name .. cost)
  if room < 10 and vim.fn.strdisplaywidth(state) > room then
    cost, room = "", room + vim.fn.strdisplaywidth(cost)
  end
  local status = name .. render.fit_middle(state, math.max(room, 1)) .. cost
  local title = shown(c.title)
  room = width - vim.fn.strdisplaywidth(status) - 5
  if title == "" or room < 2 then
    return status, ""
  end
  return status, render.fit(title, room)
end

---The transcript's statusline (`%!`): M.status, the title in its own colour; in the title's place while the cursor is
---on a step's title there, the key that opens the step's diff (nothing else said that it does).
---@return string
function M.transcript_bar()
  local win = vim.g.statusline_winid or vim.api.nvim_get_current_win()
  local status, title = M.status(win)
  local c, key = require("ollie.chat").get(false), (config.options.keymaps.open_location or {}).n
  local at = key and c and win == vim.api.nvim_get_current_win() and c.transcript.buf == vim.api.nvim_win_get_buf(win)
    and c.transcript:target_at(vim.api.nvim_win_get_cursor(win)[1] - 1)
  if at and at.step and not (at.step.diffs and #at.step.diffs == 0) then -- (not one known to have changed nothing)
    return esc(" " .. status) .. " · %#OllieInputHint#" .. esc(key .. " opens this step's diff") .. "%*"
  end
  return esc(" " .. status) .. (title ~= "" and (" · %#OllieTitle#" .. esc(title) .. "%*") or "")
end

---Give a window a statusline (or winbar) drawn by M.bar.
---@param win integer
---@param option "statusline"|"winbar"
---@param bar ollie.Bar
function M.set_bar(win, option, bar)
  vim.w[win].ollie_bar = bar
  vim.wo[win][0][option] = "%!v:lua.require'ollie.chatwin'.bar()"
end

---The chat's width beside the code: the configured one, but in a narrow terminal the code keeps half of it.
---@return integer
local function side_width()
  local c = config.options.chat
  return math.max(math.floor(vim.o.columns / 2), math.min(c.width, vim.o.columns - 60))
end

---The input area's height: the configured one, less in a terminal too short for it.
---@return integer
local function input_height()
  return math.min(config.options.chat.input_height, math.max(1, math.floor(vim.o.lines / 4)))
end

---The chat's rows at the bottom (its input's too): the configured ones, but in a short terminal the code keeps half.
---@return integer
local function bottom_height()
  return math.min(config.options.chat.height, math.floor(vim.o.lines / 2))
end

---Another window of the tab closes: Neovim gives its rows to the windows beside it, 'winfixheight' or not. A split
---across the bottom (:OllieChanges' list, `:botright split`) gave them all to the input area, which grew over the
---transcript: it keeps its height, or takes back the rows that split squeezed out of it.
function W:keep_input_height()
  local _, iw = self:windows()
  local height = iw and math.max(vim.api.nvim_win_get_height(iw), input_height())
  vim.schedule(function()
    if iw and vim.api.nvim_win_is_valid(iw) and vim.api.nvim_win_get_height(iw) ~= height then
      vim.api.nvim_win_set_height(iw, height)
    end
  end)
end

---Give the chat's windows their size again (after the terminal was resized).
function W:fit()
  local tw, iw = self:windows()
  if iw then
    -- A terminal too short for it squeezed the input area ('winfixheight' gives way then): it grows back.
    vim.api.nvim_win_set_height(iw, input_height())
  end
  self:draw_plan()
  if not tw then
    return
  end
  local position, beside = config.options.chat.position, #vim.api.nvim_tabpage_list_wins(self.tab) > 1
  if beside and position == "bottom" then
    vim.api.nvim_win_set_height(tw, math.max(1, bottom_height() - (iw and input_height() + 1 or 0)))
  elseif beside and position ~= "tab" then
    vim.api.nvim_win_set_width(tw, side_width())
  end
end

---The transcript's window, among the windows `resized` (WinResized's), shows its end again when it was at its end:
---narrower, its lines wrap onto more rows; shorter (a second tab's tabline, a split below), Neovim kept the cursor's
---line in sight but not the waiting prompts under it (the last held one hid below the window's foot until the next
---event scrolled it).
---@param resized integer[]
function W:keep_end(resized)
  local tw = self:windows()
  if tw and vim.tbl_contains(resized, tw) and vim.api.nvim_win_get_cursor(tw)[1] == self.transcript:count() then
    self.transcript:show_end(tw)
  end
end

---Give a chat window its options, its bar and its role (`w:ollie_role`: a buffer that is not the chat's, coming
---into it, goes to the code instead; see keep_own). The options are set as `:setlocal` does: a window split from a
---chat window and given another buffer (the changes list, a diff tab, a file) shows it with the user's options.
---@param win integer
---@param role "transcript"|"input"
local function setup_win(win, role)
  vim.w[win].ollie_role = role
  if role == "transcript" then
    render.setup_window(win)
    vim.wo[win][0].statusline = "%!v:lua.require'ollie.chatwin'.transcript_bar()"
  else
    local wo = vim.wo[win][0]
    wo.winfixheight = true
    wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
    wo.wrap, wo.linebreak, wo.breakindent = true, true, true -- a long prompt wraps at words
    M.set_bar(win, "statusline", { label = "prompt", label_hl = "OllieInputLabel", hint_hl = "OllieInputHint",
      hints = key_hints("n"), hints_i = key_hints("i") })
  end
end

---Show the chat (transcript above its input area) beside the code; focus the input when `focus`.
---@param focus boolean|nil
function W:open(focus)
  self:revive() -- the user may have wiped (:bw) its buffers
  local tw, iw = self:windows()
  local from = vim.api.nvim_get_current_win()
  if not tw and iw then
    -- The input area stayed without it (`<C-w>o` there): the transcript goes back above it. Before, it opened
    -- as a column of its own beside the input.
    vim.api.nvim_set_current_win(iw)
    vim.cmd("aboveleft split")
    tw = vim.api.nvim_get_current_win()
    vim.wo[tw].winfixheight = false
    vim.api.nvim_win_set_buf(tw, self.transcript.buf)
    setup_win(tw, "transcript")
    vim.api.nvim_win_set_height(iw, config.options.chat.input_height)
  elseif not tw then
    local c = config.options.chat
    if c.position == "tab" then
      vim.cmd("tab split")
      self.tab = vim.api.nvim_get_current_tabpage()
      require("ollie.chat").chats[self.tab] = self
    elseif c.position == "bottom" then
      vim.cmd("botright " .. bottom_height() .. "split")
    else
      vim.cmd((c.position == "left" and "topleft " or "botright ") .. side_width() .. "vsplit")
    end
    tw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(tw, self.transcript.buf)
    setup_win(tw, "transcript")
  end
  if not iw then
    vim.api.nvim_set_current_win(tw)
    vim.cmd("belowright " .. config.options.chat.input_height .. "split")
    iw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(iw, self.input_buf)
    setup_win(iw, "input")
  end
  self.transcript:show_end(tw)
  self:draw_plan()
  if focus then
    vim.api.nvim_set_current_win(iw)
  elseif vim.api.nvim_win_is_valid(from) then
    vim.api.nvim_set_current_win(from)
  end
end

---Windows showing the chat's buffers with none of its window settings (a session file put them there) get them.
function W:adopt()
  local tw, iw = self:windows()
  for role, win in pairs({ transcript = tw, input = iw }) do
    if not vim.w[win].ollie_role then
      setup_win(win, role)
    end
  end
end

---Go to the input area.
---@param insert boolean start insert mode there
function W:focus_input(insert)
  self:open(true)
  if insert then
    vim.cmd("startinsert!")
  end
end

---Close the chat's windows (the session goes on; :OllieChat shows it again).
function W:close()
  if self.plan_win and vim.api.nvim_win_is_valid(self.plan_win) then
    vim.api.nvim_win_close(self.plan_win, true) -- a float counts as a window of the tab below
  end
  self.plan_win = nil
  local tw, iw = self:windows()
  for _, win in pairs({ iw, tw }) do
    if win and #vim.api.nvim_tabpage_list_wins(self.tab) > 1 then
      vim.api.nvim_win_close(win, true)
    end
  end
end

-- Where the code goes back beside the chat (by the chat's position).
local CODE_SIDE = {
  right = "topleft vertical", left = "botright vertical", bottom = "topleft", tab = "topleft vertical",
}

---The window to open a file in: the file window, else the one the user was last in (an empty `:enew` one), else
---the tab's first ordinary window showing a buffer of the user's; never a chat window.
---@return integer|nil
function W:code_win()
  local function usable(w)
    return vim.api.nvim_win_is_valid(w) and vim.api.nvim_win_get_tabpage(w) == self.tab and not vim.w[w].ollie_role
      and vim.api.nvim_win_get_config(w).relative == "" and vim.bo[vim.api.nvim_win_get_buf(w)].buftype == ""
  end
  if self:file_win() then
    return self:file_win()
  end
  if self.origin_win and usable(self.origin_win) then
    return self.origin_win
  end
  return vim.tbl_filter(usable, vim.api.nvim_tabpage_list_wins(self.tab))[1]
end

---A buffer not the chat's came into one of its windows (`:e file`, `:b#`, `:enew`, a file picker run there): it
---goes to the code window (a new one beside the chat when there is none), where the cursor goes too, and the chat
---window shows its own buffer again. Before, the file took the chat's place and the chat came back in a third
---column on `:OllieChat`.
---@param win integer
---@param buf integer
function W:keep_own(win, buf)
  local role = vim.w[win].ollie_role
  if buf == self.quitting or buf == self.transcript.buf or buf == self.input_buf
    or vim.bo[buf].filetype:match("^ollie") then
    return -- its own, the throwaway a quit shows, or another chat's (`:OllieChat name`)
  end
  vim.schedule(function()
    if not (vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win) == buf
      and vim.api.nvim_buf_is_valid(buf)) then
      return
    end
    self:revive()
    local cursor = vim.api.nvim_win_get_cursor(win) -- `:e +12 file` put it there
    vim.api.nvim_win_set_buf(win, role == "transcript" and self.transcript.buf or self.input_buf)
    setup_win(win, role)
    local code = self:code_win()
    if code then
      vim.api.nvim_set_current_win(code)
      vim.api.nvim_win_set_buf(code, buf)
    else
      vim.api.nvim_set_current_win(win)
      vim.cmd(CODE_SIDE[config.options.chat.position] .. " sbuffer " .. buf)
      self:fit()
    end
    pcall(vim.api.nvim_win_set_cursor, 0, cursor)
  end)
end

---The tab's ordinary windows (no floats) but those in `skip`.
---@param tab integer
---@param skip table<integer, boolean>
---@return integer[]
local function other_wins(tab, skip)
  return vim.tbl_filter(function(w)
    return not skip[w] and vim.api.nvim_win_get_config(w).relative == ""
  end, vim.api.nvim_tabpage_list_wins(tab))
end

---A file buffer with unsaved changes (ollie's own buffers are `nofile`: they never count), or nil.
---@return integer|nil
local function unsaved()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[buf].modified and vim.bo[buf].buftype == "" then
      return buf
    end
  end
  return nil
end

---QuitPre in the chat's tab: `:q` in the input or the transcript closes both (half_closed, once it did: the quit
---may be refused), quitting the editor when the chat was all it showed; `:q` in the tab's last code window closes
---the chat first, so the editor quits at once.
function W:quit_pre()
  local tw, iw = self:windows()
  local cur = vim.api.nvim_get_current_win()
  if not (tw or iw) or vim.api.nvim_win_get_config(cur).relative ~= "" then
    return
  end
  if cur == tw or cur == iw then
    -- `:q!` unloads the window's buffer ('bufhidden' notwithstanding): the transcript or the typed prompt would
    -- be lost. The window quits on a throwaway buffer instead; the chat's stay, hidden, for :OllieChat.
    local own = vim.api.nvim_win_get_buf(cur)
    local throwaway = vim.api.nvim_create_buf(false, true)
    vim.bo[throwaway].bufhidden = "wipe"
    self.quitting = throwaway
    vim.api.nvim_win_set_buf(cur, throwaway)
    vim.schedule(function()
      self.quitting = nil
      if vim.api.nvim_win_is_valid(cur) and vim.api.nvim_win_get_buf(cur) == throwaway then
        vim.api.nvim_win_set_buf(cur, own) -- the quit was refused (`:qa` and an unsaved file): all as it was
        local t, i = self:windows()
        if t and not i then
          self:open(false) -- the input went with a quit of the editor that was refused
        end
      end
    end)
    return
  end
  if #other_wins(self.tab, { [tw or 0] = true, [iw or 0] = true, [cur] = true }) > 0 then
    return -- another window stays: this `:q` closes only its own
  end
  if unsaved() then
    -- The window may close (`:q!`, or `:q` with 'hidden'), the editor may not: see below.
    local quit_buf = vim.api.nvim_win_get_buf(cur)
    vim.schedule(function()
      if not vim.api.nvim_win_is_valid(cur) then
        self:leave(quit_buf)
      end
    end)
    return
  end
  for _, win in pairs({ iw, tw }) do
    vim.api.nvim_win_close(win, true)
  end
end

---A quit closed the tab's last code window (`quit_buf` its buffer), or a chat window when the chat was all the tab
---showed: the chat goes too, with the tab, or with the editor when it was the last one. Not while a file has
---unsaved changes: as a stock `:q` in the last window, the editor stays, showing that file and saying why.
---@param quit_buf integer|nil
function W:leave(quit_buf)
  local tw, iw = self:windows()
  local wins = vim.tbl_values({ iw, tw })
  if #wins == 0 or #other_wins(self.tab, { [tw or 0] = true, [iw or 0] = true }) > 0 then
    return
  end
  local buf = quit_buf and vim.api.nvim_buf_is_valid(quit_buf) and vim.bo[quit_buf].modified and quit_buf
    or unsaved()
  if buf then
    vim.api.nvim_set_current_win(wins[1])
    vim.cmd(CODE_SIDE[config.options.chat.position] .. " sbuffer " .. buf)
    if quit_buf then
      self:fit() -- the code's `:q` was refused: the tab as it was
    else
      for _, win in ipairs(wins) do
        vim.api.nvim_win_close(win, true) -- the chat's `:q` went through: the unsaved file shows instead
      end
    end
    local msg = buf == quit_buf and "E37: No write since last change (add ! to override)"
      or string.format('E162: No write since last change for buffer "%s"', vim.fn.bufname(buf))
    vim.api.nvim_echo({ { msg, "ErrorMsg" } }, true, {})
  elseif #vim.api.nvim_list_tabpages() > 1 then
    for _, win in ipairs(wins) do
      vim.api.nvim_win_close(win, true) -- the last one closes the tab
    end
  else
    vim.api.nvim_set_current_win(wins[1])
    local ok, err = pcall(vim.cmd.quit) -- this window goes; then half_closed quits with the other
    if not ok then -- E173: more files to edit, as stock `:q` says
      vim.api.nvim_echo({ { (tostring(err):gsub("^Vim[^:]*:", "")), "ErrorMsg" } }, true, {})
    end
  end
end

---One of the chat's windows was closed (`:q`, `:close`, `<C-w>c`): the other goes too. When it is all its tab
---shows, it stays (`:only` in the transcript), unless a quit closed the first: then the tab (or the editor) goes.
---@param quit boolean a `:q` closed it
function W:half_closed(quit)
  local tw, iw = self:windows()
  local left = (tw and not iw and tw) or (iw and not tw and iw) or nil
  if not left then
    return
  end
  if #other_wins(self.tab, { [left] = true }) > 0 then
    vim.api.nvim_win_close(left, true)
  elseif quit then
    self:leave()
  end
end

---gx: the web address under the cursor, opened by the system (the browser) once the user has seen it whole and said
---yes. Neovim's own handed the system's opener (xdg-open) any scheme the model wrote (`file:`, `ssh:`, one a
---desktop program registered) and any name, as the user. (The transcript's and the changes list's gx.)
function M.open_address()
  local address = vim.fn.expand("<cfile>")
  if not address:match("^https?://") then
    vim.api.nvim_echo({ { address .. ": not a web address: not opened", "ErrorMsg" } }, true, {})
  elseif vim.fn.confirm("Open " .. address .. " in the browser?", "&Open\n&Cancel", 2) == 1 then
    vim.ui.open(address)
  end
end

---Map every stock key that edits the name under the cursor (gf, gF, <C-w>f and kin) in `buf` to `open`; a visual
---gf or gF opens the name where the selection starts. Neovim's own hand an address the model wrote to netrw (which
---fetches it as the user, outside the sandbox and its proxy), and open what a link a step added points at.
---@param buf integer
---@param open fun()
function M.guard_file_keys(buf, open)
  for _, key in ipairs({ "gf", "gF", "[f", "]f", "<C-w>f", "<C-w><C-f>", "<C-w>F", "<C-w>gf", "<C-w>gF" }) do
    vim.keymap.set("n", key, open, { buffer = buf, desc = "ollie: open file" })
  end
  for _, key in ipairs({ "gf", "gF" }) do
    vim.keymap.set("x", key, "<Esc>`<" .. key, { buffer = buf, remap = true, desc = "ollie: open file" })
  end
end

---Open `name` (default: the name under the cursor) in a split at the top, when it is a regular file of the workspace
---(the chat's root), links followed: the keys of guard_file_keys in a question's float and the changes list, whose
---names are the model's (a FIFO would hold the editor for good; a link a step added may point anywhere).
---@param name string|nil
function M.open_named(name)
  name = name or vim.fn.expand("<cfile>")
  local real = vim.uv.fs_realpath(vim.fn.fnamemodify(name, ":p"))
  local root = vim.uv.fs_realpath(require("ollie.client").root_dir())
  local why = name:find("://", 1, true) and "is an address, not a file"
    or not (real and root and vim.startswith(real, root .. "/")) and "is no file of the workspace"
    or require("ollie.requests").unopenable(real)
  if why then
    return vim.api.nvim_echo({ { require("ollie.permission").shown_path(name) .. " " .. why .. ": not opened",
      "ErrorMsg" } }, true, {})
  end
  -- An argument, not a command line: a step's name `m<LF>so.x.vim` ran its second line (requests.follow_moves).
  vim.cmd.split({ real, mods = { split = "topleft" }, magic = { file = false } })
end

---Open what the transcript line under the cursor points at: a step location's file at its line (in the file
---window, a new split if none), a step's own diff, or a changes line's list of changed files.
---@param fallback_cr boolean when nothing is under the cursor: <CR> does nothing, gf does its usual
function W:open_location(fallback_cr)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local loc = self.transcript:target_at(row)
  if loc and loc.step then
    return require("ollie.review").step_diff(loc.step, self.session)
  elseif loc and loc.path == nil then
    if self:file_win() then
      vim.api.nvim_set_current_win(self:file_win()) -- the list opens under the code, not under the chat
    end
    require("ollie.review").changes(loc.turn, self.session)
    return
  end
  if not loc and not fallback_cr then
    -- gf on a path the answer names (`calc.py`, `calc.py:12`): opened in the code window, not over the transcript.
    local cfile = vim.fn.expand("<cfile>")
    if cfile ~= "" and vim.fn.filereadable(cfile) == 1 then
      local after = vim.api.nvim_get_current_line():match(vim.pesc(cfile) .. ":(%d+)")
      loc = { path = cfile, line = tonumber(after) }
    elseif cfile:find("://", 1, true) then
      -- The model wrote it: Neovim's gf hands `http://`, `scp://` and the like to netrw, which fetches them as the
      -- user (wget, curl, scp), outside the sandbox and its proxy.
      vim.api.nvim_echo({ { cfile .. " is an address, not a file: not opened", "ErrorMsg" } }, true, {})
      return
    else
      local ok, err = pcall(vim.cmd, "normal! gf") -- the stock message (E447) says what it could not find
      if not ok then
        vim.api.nvim_echo({ { (tostring(err):gsub("^Vim[^:]*:", "")), "ErrorMsg" } }, true, {})
      end
      return
    end
  end
  if not loc then
    return
  end
  -- The model names the location: a FIFO there would hold the editor for good, a link leading out read a key; a
  -- buffer named with a line break goes into a `:mksession` file as a command (the rest of its name run as the user).
  local why = loc.path:find("\n") and "has a line break in its name"
    or require("ollie.requests").unopenable(vim.fn.fnamemodify(loc.path, ":p"))
  if why then
    vim.api.nvim_echo({ { require("ollie.permission").shown_path(loc.path) .. " " .. why .. ": not opened",
      "ErrorMsg" } }, true, {})
    return
  end
  if self:file_win() then
    vim.api.nvim_set_current_win(self:file_win() --[[@as integer]])
  else
    vim.cmd("topleft vsplit")
  end
  local buf = vim.fn.bufnr(vim.fn.fnamemodify(loc.path, ":p"))
  if buf ~= -1 then
    vim.api.nvim_win_set_buf(0, buf) -- the open buffer, unsaved edits and all
  else
    vim.cmd.edit(vim.fn.fnameescape(loc.path))
  end
  if loc.line then
    pcall(vim.api.nvim_win_set_cursor, 0, { loc.line, 0 })
  end
end

---The chat's statusline groups: its own colours, bold or italic. (Title and Comment, made for the editor's
---background, were unreadable on a statusline: near-black on dark grey in a light colorscheme.)
function M.highlights()
  vim.api.nvim_set_hl(0, "OllieTitle", { bold = true, default = true })
  vim.api.nvim_set_hl(0, "OllieInputLabel", { bold = true, default = true })
  vim.api.nvim_set_hl(0, "OllieInputHint", { italic = true, default = true })
end
M.highlights()

local group = vim.api.nvim_create_augroup("ollie_chatwin", { clear = true })
vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = M.highlights })
-- A buffer coming into a chat window (keep_own).
vim.api.nvim_create_autocmd("BufWinEnter", {
  group = group,
  callback = function(a)
    local win = vim.api.nvim_get_current_win()
    local chat = vim.w[win].ollie_role and require("ollie.chat").chats[vim.api.nvim_get_current_tabpage()]
    if chat then
      chat:keep_own(win, a.buf)
    end
  end,
})

return M
