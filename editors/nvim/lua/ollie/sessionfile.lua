-- Session files (`:mksession`, session plugins) saved with the chat open: their chat windows are rewritten when
-- written (chat_window): in a new editor they bring back silent empty stand-ins of the chat's buffers, which go
-- once the session is loaded (plugin/ollie.lua); in the editor where the chat runs, the chat itself.
local M = {}

---Wipe the empty stand-ins of ollie's buffers, closing their windows: they showed as a second, dead chat, and
---ollie's own buffers could not take their names (the chat's were "[Scratch]"; `:OllieChanges` failed with E95).
---ollie's own buffers are all `nofile`; a stand-in is not.
function M.drop_stand_ins()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.startswith(vim.api.nvim_buf_get_name(buf), "ollie://") and vim.bo[buf].buftype == "" then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
end

---The Vimscript a session file runs for a chat window (its `enew` and `file ollie://...` lines): in an editor where
---that chat runs (`:source Session.vim`), its own buffer; else (`nvim -S`) the stand-in, silent (each said
---"[Not edited]" as the session loaded, and stopped `nvim -S` at a "Press ENTER" prompt). Before, the running
---chat's buffer had the name: `:file` failed (E95) and left the window empty where the chat was.
---@param name string
---@return string[]
local function chat_window(name)
  local quoted = "'" .. name:gsub("\\(.)", "%1"):gsub("'", "''") .. "'" -- (as `:file` took it: unescaped)
  return {
    "if bufexists(" .. quoted .. ")",
    "  exe 'buffer' bufnr('^' .. " .. quoted .. " .. '$')",
    "else",
    "  enew",
    "  silent file " .. name,
    "endif",
  }
end

---Rewrite the session file's chat windows (chat_window): restored, they show the running chat, or a silent
---stand-in that goes once the session is loaded. A command whose name a line break split is dropped: `:mksession`
---writes a line break in a buffer's name as `\` and a line break, and sourced, the name's next line ran as a command
---(a step's file `m<LF>so.x.vim`, opened from the chat, sourced the step's script).
---@param path string
function M.silence(path)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return
  end
  local out, ours, broken = {}, 0, false
  for _, line in ipairs(lines) do
    local name, split = line:match("^file (ollie://.+)$"), broken
    broken = #line:match("\\*$") % 2 == 1 -- (an odd run of backslashes at its end escapes the line break)
    if split or broken then
      ours = ours + 1
    elseif name then
      if out[#out] == "enew" then
        table.remove(out)
      end
      vim.list_extend(out, chat_window(name))
      ours = ours + 1
    else
      table.insert(out, line)
    end
  end
  if ours > 0 then
    vim.fn.writefile(out, path)
  end
end

---Each window a session file gave a chat's buffer is that chat's again; a chat shown in another tab than its own,
---its own closed by the session, is that tab's.
local function adopt_windows()
  local chats = require("ollie.chat")
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
      local buf = vim.api.nvim_win_get_buf(win)
      for _, chat in ipairs(chats.every()) do
        if buf == chat.transcript.buf or buf == chat.input_buf then
          local own = vim.api.nvim_tabpage_is_valid(chat.tab) and chats.chats[chat.tab] == chat
          if chat.tab ~= tab and not own and not chats.chats[tab] then
            chat.tab = tab
            chats.chats[tab] = chat
          end
          if chat.tab == tab then
            chat:adopt()
          end
        end
      end
    end
  end
end

---A session was loaded while a chat runs: its stand-ins go, and the windows it gave that chat's buffers are the
---chat's again (their options, bars and roles), the chat taking their tab when its own is gone (`tabonly`).
function M.loaded()
  M.drop_stand_ins()
  adopt_windows()
end

return M
