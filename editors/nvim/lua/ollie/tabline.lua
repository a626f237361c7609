-- Tab labels for a user with Neovim's default tabline: a tab whose window in use shows one of ollie's buffers is
-- labelled by what it is ("ollie: fix the login test", "ollie: after Edit app.py: app.py"), any other as Neovim labels
-- it. Neovim's own label is that buffer's name shortened as a path: "o//s/a/app.py", "o//i/1". A sidebar (the changes
-- list) in use names no tab: the window she came from does.
local M = {}

local MAX_TITLE = 30

---@param text string
---@return string
local function esc(text)
  return (text:gsub("%%", "%%%%"))
end

---What one of ollie's buffers shows, for its tab's label (nil: not ollie's): the chat's session title, or the
---buffer's own label (`b:ollie_label`: a diff's "before" side).
---@param buf integer
---@return string|nil
function M.label_of(buf)
  if type(vim.b[buf].ollie_label) == "string" then
    return vim.b[buf].ollie_label
  end
  local chats = package.loaded["ollie.chat"] -- not loaded: no chat yet (a tab's label never loads it)
  if not (chats and vim.startswith(vim.api.nvim_buf_get_name(buf), "ollie://")) then
    return nil
  end
  for _, c in ipairs(chats.every()) do
    if c.transcript.buf == buf or c.input_buf == buf then
      local title = vim.trim(c.title:gsub("%c", " "))
      if vim.fn.strchars(title) > MAX_TITLE then
        title = vim.fn.strcharpart(title, 0, MAX_TITLE - 1) .. "…"
      end
      return string.format("ollie%s: %s", c.name and ("[" .. c.name .. "]") or "", title ~= "" and title or "chat")
    end
  end
end

---A buffer's name as Neovim's default tab label shows it: shortened as a path, or what kind of buffer it is.
---@param buf integer
---@return string
local function default_name(buf)
  local name = vim.fn.bufname(buf)
  if name ~= "" then
    return vim.fn.pathshorten(vim.fn.fnamemodify(name, ":~"))
  end
  local kinds = { quickfix = "[Quickfix List]", nofile = "[Scratch]", prompt = "[Prompt]" }
  return kinds[vim.bo[buf].buftype] or "[No Name]"
end

---Whether `win` is a window a tab is named by: not floating, not a sidebar (`b:ollie_sidebar`: the changes list).
---@param win integer
---@return boolean
local function names_tab(win)
  return vim.api.nvim_win_get_config(win).relative == "" and not vim.b[vim.api.nvim_win_get_buf(win)].ollie_sidebar
end

---The window a tab is named by: the one in use, or, a sidebar in use, the one she came from (else the tab's first
---that is not a sidebar), as other plugins' sidebars leave their tab's label to her file or the chat.
---@param tab integer
---@return integer
local function main_window(tab)
  local win = vim.api.nvim_tabpage_get_win(tab)
  if names_tab(win) then
    return win
  end
  local number = vim.api.nvim_tabpage_get_number(tab)
  local came = vim.fn.win_getid(vim.fn.tabpagewinnr(number, "#"), number)
  if came ~= 0 and names_tab(came) then
    return came
  end
  for _, other in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if names_tab(other) then
      return other
    end
  end
  return win
end

---One tab's label as Neovim draws it (its windows' count, "+" when one has changes, a name), ollie's name for its
---buffers.
---@param tab integer
---@return string
function M.label(tab)
  local count, modified = 0, false
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if vim.api.nvim_win_get_config(win).relative == "" then
      count = count + 1
      modified = modified or vim.bo[vim.api.nvim_win_get_buf(win)].modified
    end
  end
  local buf = vim.api.nvim_win_get_buf(main_window(tab))
  local prefix = (count > 1 and tostring(count) or "") .. (modified and "+" or "")
  return (prefix ~= "" and (prefix .. " ") or "") .. (M.label_of(buf) or default_name(buf))
end

---The 'tabline' (`%!`): every tab's label, clickable, the current one highlighted; a close button when there are
---several, as Neovim's own.
---@return string
function M.draw()
  local parts, current = {}, vim.api.nvim_get_current_tabpage()
  for i, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local hl = tab == current and "%#TabLineSel#" or "%#TabLine#"
    table.insert(parts, string.format("%s%%%dT %s ", hl, i, esc(M.label(tab))))
  end
  local close = #parts > 1 and "%=%#TabLine#%999XX" or ""
  return table.concat(parts) .. "%#TabLineFill#%T" .. close
end

---Draw the tabline, unless the user has a tabline of their own.
function M.setup()
  if vim.o.tabline == "" then
    vim.o.tabline = "%!v:lua.require'ollie.tabline'.draw()"
  end
end

return M
