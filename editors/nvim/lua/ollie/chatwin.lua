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

---The hints of the input keys, from the config.
---@return string[]
local function key_hints()
  local k = config.options.keymaps
  local parts = {}
  for _, item in ipairs({ { "send", "send/queue" }, { "inject", "inject" }, { "stop", "stop" } }) do
    local lhs = k[item[1]] and (k[item[1]].n or k[item[1]].i)
    if lhs then
      table.insert(parts, lhs .. " " .. item[2])
    end
  end
  return parts
end

---@class ollie.Bar
---@field label string what always shows (a file's name, "prompt")
---@field label_hl string|nil
---@field hints string[] key hints, the most useful first
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
  local hints = vim.deepcopy(bar.hints or {})
  local room = vim.api.nvim_win_get_width(win) - vim.fn.strdisplaywidth(bar.label) - (bar.paren and 6 or 4)
  while #hints > 0 and vim.fn.strdisplaywidth(table.concat(hints, sep)) > room do
    table.remove(hints)
  end
  local function esc(text)
    return (text:gsub("%%", "%%%%"))
  end
  local label = bar.label_hl and ("%#" .. bar.label_hl .. "# " .. esc(bar.label) .. " %*") or esc(bar.label)
  local text = table.concat(hints, sep)
  if bar.paren then
    text = " (" .. text .. ")"
  end
  return "%<" .. label .. (#hints > 0 and ("%#Comment# " .. esc(text) .. "%*") or "")
end

---Give a window a statusline (or winbar) drawn by M.bar.
---@param win integer
---@param option "statusline"|"winbar"
---@param bar ollie.Bar
function M.set_bar(win, option, bar)
  vim.w[win].ollie_bar = bar
  vim.wo[win][option] = "%!v:lua.require'ollie.chatwin'.bar()"
end

---The chat's width beside the code: the configured one, but in a narrow terminal the code keeps half of it.
---@return integer
local function side_width()
  local c = config.options.chat
  return math.max(math.floor(vim.o.columns / 2), math.min(c.width, vim.o.columns - 60))
end

---Give the chat's windows their size again (after the terminal was resized).
function W:fit()
  local tw = self:windows()
  local position = config.options.chat.position
  if not tw or position == "tab" or #vim.api.nvim_tabpage_list_wins(self.tab) < 2 then
    return
  end
  if position == "bottom" then
    vim.api.nvim_win_set_height(tw, math.min(config.options.chat.height, math.floor(vim.o.lines / 2)))
  else
    vim.api.nvim_win_set_width(tw, side_width())
  end
end

---Show the chat (transcript above its input area) beside the code; focus the input when `focus`.
---@param focus boolean|nil
function W:open(focus)
  local tw, iw = self:windows()
  local from = vim.api.nvim_get_current_win()
  if not tw then
    local c = config.options.chat
    if c.position == "tab" then
      vim.cmd("tab split")
      self.tab = vim.api.nvim_get_current_tabpage()
      require("ollie.chat").chats[self.tab] = self
    elseif c.position == "bottom" then
      vim.cmd("botright " .. c.height .. "split")
    else
      vim.cmd((c.position == "left" and "topleft " or "botright ") .. side_width() .. "vsplit")
    end
    tw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(tw, self.transcript.buf)
    render.setup_window(tw)
    vim.wo[tw].statusline = " %{v:lua.require'ollie'.statusline()}"
  end
  if not iw then
    vim.api.nvim_set_current_win(tw)
    vim.cmd("belowright " .. config.options.chat.input_height .. "split")
    iw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(iw, self.input_buf)
    vim.wo[iw].winfixheight = true
    vim.wo[iw].number, vim.wo[iw].relativenumber, vim.wo[iw].signcolumn = false, false, "no"
    M.set_bar(iw, "statusline", { label = "prompt", label_hl = "OllieUser", hints = key_hints() })
  end
  vim.api.nvim_win_set_cursor(tw, { vim.api.nvim_buf_line_count(self.transcript.buf), 0 })
  if focus then
    vim.api.nvim_set_current_win(iw)
  elseif vim.api.nvim_win_is_valid(from) then
    vim.api.nvim_set_current_win(from)
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
  local tw, iw = self:windows()
  for _, win in ipairs({ iw, tw }) do
    if win and #vim.api.nvim_tabpage_list_wins(self.tab) > 1 then
      vim.api.nvim_win_close(win, true)
    end
  end
end

---Open what the transcript line under the cursor points at: a step location's file at its line (in the file
---window, a new split if none), or a changes line's list of changed files.
---@param fallback_cr boolean when nothing is under the cursor: <CR> does nothing, gf does its usual
function W:open_location(fallback_cr)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local loc = self.transcript:target_at(row)
  if loc and loc.path == nil then
    if self.origin_win and vim.api.nvim_win_is_valid(self.origin_win) then
      vim.api.nvim_set_current_win(self.origin_win) -- the list opens under the code, not under the chat
    end
    require("ollie.review").changes(loc.turn, self.session)
    return
  end
  if not loc then
    if not fallback_cr then
      vim.cmd("normal! gf")
    end
    return
  end
  if self.origin_win and vim.api.nvim_win_is_valid(self.origin_win) then
    vim.api.nvim_set_current_win(self.origin_win)
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

return M
