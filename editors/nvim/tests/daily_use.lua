-- A day's habits in and around the chat: a session file restored with the chat open; `:e file` and `:enew` typed
-- in a chat window; `:'<,'>Ollie` on lines of the chat's own answer; the input's statusline in a light and a dark
-- colorscheme.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

-- What a session file saved with the chat open (`:mksession`, a session plugin) runs for its windows: an empty
-- stand-in buffer named as each of the chat's, then SessionLoadPost. Bug: they stayed as a dead second chat, and
-- the chat's own buffers, their names taken, showed as "[Scratch]".
vim.cmd.edit("code.py")
vim.cmd("botright vsplit | enew | file ollie://chat/1 | belowright split | enew | file ollie://input/1")
vim.cmd("doautoall SessionLoadPost")
R.windows_after_session = #vim.api.nvim_tabpage_list_wins(0)
R.stand_ins = #vim.tbl_filter(function(b)
  return vim.api.nvim_buf_get_name(b):find("^ollie://") ~= nil
end, vim.api.nvim_list_bufs())
vim.cmd("wincmd p") -- (the code window)

vim.cmd("Ollie first question")
H.wait_chat("Line one.*_%(end%)_")
local c = H.current()
R.transcript_name = vim.api.nvim_buf_get_name(c.transcript.buf)
R.windows_with_chat = #vim.api.nvim_tabpage_list_wins(0)

-- `:2,3Ollie` with no question yet: the lines wait in the input for it. Bug: they were dropped.
vim.cmd("2,3Ollie")
R.draft = vim.api.nvim_buf_get_lines(c.input_buf, 0, -1, false)
R.draft_in_input = vim.api.nvim_get_current_buf() == c.input_buf
local _, drafted = c:tags(R.draft[1])
R.draft_labels = require("ollie.context").labels(drafted)
vim.cmd("stopinsert")
vim.api.nvim_buf_set_lines(c.input_buf, 0, -1, false, {})
vim.cmd("wincmd p")

---Where things are: each window's buffer name (relative), the current window's among them.
local function layout()
  local wins = {}
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)), ":.")
    table.insert(wins, (w == vim.api.nvim_get_current_win() and "*" or "") .. (name == "" and "[No Name]" or name))
  end
  table.sort(wins)
  return wins
end

-- `:e notes.txt` typed in the transcript: the file opens in the code window, the chat stays as it was. Bug: the
-- file took the transcript's place, and `:OllieChat` then brought the chat back in a third column.
local tw, iw = c:windows()
vim.api.nvim_set_current_win(tw --[[@as integer]])
vim.cmd("edit +1 notes.txt")
H.settle()
R.after_edit = layout()
-- `:enew` in the input area: the empty buffer goes to the code window too.
vim.api.nvim_set_current_win(iw --[[@as integer]])
vim.cmd("enew")
H.settle()
R.after_enew = layout()
R.input_bar = vim.wo[iw].statusline
vim.cmd("buffer notes.txt")
-- `<C-w>o` in the input area, then `:OllieChat`: the transcript comes back above it. Bug: beside it, a column of
-- its own, with the input a full-height column where the code was.
vim.api.nvim_set_current_win(iw --[[@as integer]])
vim.cmd("only")
vim.cmd("OllieChat")
tw, iw = c:windows()
local tpos, ipos = vim.api.nvim_win_get_position(tw), vim.api.nvim_win_get_position(iw)
R.after_only = { windows = #vim.api.nvim_tabpage_list_wins(0), same_column = tpos[2] == ipos[2],
  above = tpos[1] < ipos[1], input_height = vim.api.nvim_win_get_height(iw) }

-- Lines of the chat's own answer sent with `:'<,'>Ollie`. Bug: the model got the block's header alone (the daemon
-- cannot read the transcript), not the lines.
vim.api.nvim_set_current_win(tw --[[@as integer]])
vim.api.nvim_win_set_buf(0, c.transcript.buf) -- (already there: the line above makes sure)
local row = H.row_of("Line one.")
vim.cmd(string.format("%d,%dOllie say more about this", row + 1, row + 2))
H.wait_chat("More%.%s+_%(end%)_")
R.range_chat = H.chat.text()

-- Back to a session that streams now (picked in :OllieSessions): Enter queues a prompt there, and the whole answer
-- shows above it in the end. Bug: the chat took it as idle; the prompt went in at once and the rest of the running
-- answer streamed in under it.
local first_session = c.session
vim.cmd("OllieNew")
H.wait(function() return c.session ~= first_session end, "the new session")
local second_session = c.session
vim.cmd("Ollie tell a story")
H.wait_chat("Once upon")
H.ollie.load_session(first_session)
H.wait_chat("say more about this")
H.ollie.load_session(second_session)
H.wait(function() return c.running and c.redrawing == nil and H.chat.text():find("tell a story", 1, true) end,
  "the streaming session drawn again")
R.switched_mid_turn = H.chat.text()
H.type_and_press("and a follow-up")
R.sent_as_prompt = H.chat.text():find("## You\nand a follow-up", 1, true) ~= nil
H.wait(function() return #c.transcript.pending > 0 or not c.running end, "the prompt queued")
R.pending_after_switch = vim.tbl_map(function(p) return p.text end, c.transcript.pending)
H.release("story")
H.wait_chat("follow%-up answer")
-- The end's redraw done (it is asked at the turn's end event: `running` alone turned false a moment before it).
H.wait(function() return not c.running and c.redrawing == nil and not c.redraw_at_end end, "the queued turn's end",
  20000)
R.story_chat = H.chat.text()
R.errors = vim.v.errmsg

-- The contrast ratio (WCAG 2) of two 24-bit colours.
local contrast = require("ollie.colors").contrast

---The lowest contrast of the input bar's label and hints, on the statusline of the current and another window.
local function bar_contrast()
  vim.cmd("OllieChat")
  tw, iw = c:windows()
  local worst = {}
  for _, current in ipairs({ true, false }) do
    vim.api.nvim_set_current_win(current and iw or tw --[[@as integer]])
    local bar = vim.api.nvim_eval_statusline(vim.wo[iw].statusline, { winid = iw, highlights = true })
    local base = vim.api.nvim_get_hl(0, { name = current and "StatusLine" or "StatusLineNC", link = false })
    for _, part in ipairs(bar.highlights) do
      local hl = vim.api.nvim_get_hl(0, { name = part.group, link = false })
      local text = bar.str:sub(part.start + 1)
      local key = vim.startswith(text, " prompt") and "label" or (text:find("send", 1, true) and "hints")
      if key then
        worst[key] = math.min(worst[key] or math.huge, contrast(hl.fg or base.fg, hl.bg or base.bg))
      end
    end
  end
  return { label = worst.label or 0, hints = worst.hints or 0 }
end

-- The input's label and key hints read on the statusline in a light colorscheme too. Bug: `prompt` was near-black
-- on dark grey there (the Title colour, made for the editor's background).
vim.o.termguicolors = true
vim.o.background = "light"
R.light = bar_contrast()
vim.o.background = "dark"
R.dark = bar_contrast()
-- The transcript's groups read in Neovim's colorschemes, light and dark: each group's text against its background
-- (the group's own, else Normal's). Bug: many light ones (morning, peachpuff, shine, zellner...) give the stock
-- groups ollie linked to a light grey (queued prompts, the changes line, a running step: contrast 1.1 to 2).
R.unreadable = {}
for _, scheme in ipairs({ "default light", "default dark", "morning", "peachpuff", "shine", "zellner", "delek",
  "evening", "habamax", "pablo", "torte", "quiet light", "quiet dark", "lunaperche light", "lunaperche dark",
  "retrobox light", "retrobox dark", "wildcharm light", "wildcharm dark" }) do
  local name, background = unpack(vim.split(scheme, " "))
  vim.o.background = background or vim.o.background
  vim.cmd.colorscheme(name)
  local normal = vim.api.nvim_get_hl(0, { name = "Normal", link = false })
  for group in pairs(require("ollie.render").HIGHLIGHTS) do
    local hl = vim.api.nvim_get_hl(0, { name = group, link = false })
    local ratio = contrast(hl.fg or normal.fg, hl.bg or normal.bg)
    if ratio < 3 then
      table.insert(R.unreadable, string.format("%s: %s %.2f", scheme, group, ratio))
    end
  end
end
table.sort(R.unreadable)
-- Still defaults: linked to the stock group where that reads, the user's own `:hi` kept over a ColorScheme.
vim.cmd.colorscheme("habamax")
R.queued_link = vim.api.nvim_get_hl(0, { name = "OllieQueued" }).link
vim.cmd("hi OllieQueued guifg=#123456")
vim.api.nvim_exec_autocmds("ColorScheme", {})
R.queued_user_fg = vim.api.nvim_get_hl(0, { name = "OllieQueued" }).fg

-- `:mksession` with the chat open: its stand-ins load silently (Bug: their "[Not edited]" messages stopped
-- `nvim -S` at a "Press ENTER" prompt).
local session_file = vim.fn.tempname()
vim.cmd("mksession! " .. session_file)
R.session_lines = vim.tbl_filter(function(l) return l:find("ollie://", 1, true) ~= nil end,
  vim.fn.readfile(session_file))
-- `:source` of it in this editor, where the chat runs: the chat comes back in its windows. Bug: `:file` failed
-- there (E95: the running chat's buffers had the names) and left an empty window where the chat was.
R.layout_saved = layout()
local sourced, source_err = pcall(vim.cmd.source, session_file)
R.source_error = not sourced and tostring(source_err) or vim.v.errmsg
H.settle()
R.layout_sourced = layout()
tw, iw = c:windows()
R.roles_sourced = { tw and vim.w[tw].ollie_role, iw and vim.w[iw].ollie_role,
  iw and vim.wo[iw].statusline:find("ollie.chatwin", 1, true) ~= nil }
H.finish()
