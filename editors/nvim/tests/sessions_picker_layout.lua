-- :OllieSessions from a tab with no chat: the picker shows over the user's layout (no empty chat behind it), a
-- dismissed picker leaves the layout as it was, and a picked session opens in the chat.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local ollie = require("ollie")

local saved = U.call("ollie/submit", { text = "explain the mul function please" }).session
vim.cmd.edit("code.py")

---Answer the next vim.ui.select with the session titled "explain…" (`pick`) or nothing; record the windows and
---chats there were while the picker showed.
local function answer(pick)
  H.results.selects = {}
  vim.ui.select = function(items, _, on_choice)
    table.insert(H.results.selects, { windows = #vim.api.nvim_tabpage_list_wins(0), chat = ollie.current() ~= nil })
    on_choice(pick and vim.iter(items):find(function(item) return type(item) == "table" and item.id == saved end)
      or nil)
  end
end

answer(false)
vim.cmd("OllieSessions")
U.wait(function() return #H.results.selects == 1 end, "the sessions picker")
H.results.dismissed = H.results.selects[1]
H.results.after_dismiss = { windows = #vim.api.nvim_tabpage_list_wins(0), chat = ollie.current() ~= nil,
  buffer = vim.fn.bufname() }

answer(true)
vim.cmd("OllieSessions")
U.wait(function()
  local c = ollie.current()
  return c and c.session == saved and c.transcript:text():find("It adds.", 1, true) ~= nil
end, "the picked session in the chat")
H.results.picked = H.results.selects[1]
H.results.after_pick_windows = #vim.api.nvim_tabpage_list_wins(0)
H.finish()
