-- What a new user ran into in the TUI: `#` tags in the prompt's order; the statusline says a prompt is on its
-- way; a rewind closes the stale changes list and puts the open buffer back; `_` in a word is no
-- markdown error; a session picked in a second tab gets its answers in both tabs; the chat keeps its width when
-- the terminal shrinks, its key hints dropped whole; `:q` in a tab's last code window closes the chat with it.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

-- As in a stock init.lua: syntax and filetype plugins on.
vim.cmd("syntax on")
vim.cmd("filetype plugin on")
vim.cmd.edit("code.py")
local code_buf = vim.api.nvim_get_current_buf()

-- Tags in the prompt's order; #selection names its lines; `#123` is no tag.
vim.api.nvim_buf_set_mark(code_buf, "<", 2, 0, {})
vim.api.nvim_buf_set_mark(code_buf, ">", 3, 0, {})
local text, contexts = require("ollie.context").parse("compare #file:notes.txt, #selection and #buffer (#123)",
  code_buf)
R.tags_text = text
R.tags_labels = vim.tbl_map(function(c) return c.label end, contexts)

-- A turn that edits the open buffer; the statusline says "sending" before the daemon answers at all.
vim.cmd("Ollie fix mul")
local first = H.current()
R.state_sent = first.state
H.wait_chat("_%(end%)_")
R.first_chat = H.chat.text()

-- The changes list is open when the turn is rewound: it goes (its turn is gone); the buffer the edit went to is
-- put back.
vim.cmd("OllieChanges 1")
H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
vim.ui.select = function(items, _, on_choice)
  on_choice(vim.iter(items):find(function(item) return vim.startswith(item, "Rewind") end))
end
vim.cmd("OllieRewind 1")
-- The daemon puts the open buffer back too (the edit went there, unsaved).
H.wait(function()
  return table.concat(vim.api.nvim_buf_get_lines(code_buf, 0, -1, false), "\n"):find("return a + b", 1, true)
end, "the rewind to revert the open buffer")
H.wait(function() return #vim.fn.win_findbuf(vim.fn.bufnr("ollie://changes")) == 0 end, "the changes list to go")
H.wait(function() return not H.chat.text():find("fixed", 1, true) end, "the chat to show the rewound history")
R.list_windows_after_rewind = #vim.fn.win_findbuf(vim.fn.bufnr("ollie://changes"))
R.code_after_rewind = table.concat(vim.api.nvim_buf_get_lines(code_buf, 0, -1, false), "\n")
R.rewound_chat = H.chat.text()
-- The reverted buffer equals the disk again but is still marked modified (an applyEdit): reload it.
vim.api.nvim_buf_call(code_buf, function() vim.cmd("edit!") end)

-- Markdown without its regex syntax's red `_` in words: treesitter in the transcript; none in the input.
vim.cmd("Ollie say the variable")
H.wait_chat("OLLIE_OPENAI_URL")
R.transcript_syntax = vim.bo[first.transcript.buf].syntax
R.transcript_treesitter = vim.treesitter.highlighter.active[first.transcript.buf] ~= nil
local _, iw = first:windows()
vim.api.nvim_buf_set_lines(first.input_buf, 0, -1, false, { "use OLLIE_MODEL" })
R.input_syntax = vim.bo[first.input_buf].syntax
R.input_underscore = vim.api.nvim_win_call(iw --[[@as integer]], function()
  return vim.fn.synIDattr(vim.fn.synID(1, 10, 1), "name")
end)

-- A second tab resumes the first tab's session: an answer there shows in both chats.
vim.cmd("tabnew")
vim.cmd("OllieChat")
H.pick_id(first.session)
vim.cmd("OllieSessions")
H.wait(function() return H.current().session == first.session end, "the second tab to show the first session")
H.wait_chat("say the variable")
vim.cmd("Ollie in both tabs")
H.wait_chat("shared answer")
H.wait_chat("shared answer\n\n_%(end%)_")
R.second_chat = H.chat.text()
R.first_chat_after = first.transcript:text()

-- The terminal shrinks (80 to 60 columns: a headless Neovim cannot grow): the chat takes half of it again, not
-- what the code left over; its key hints drop whole.
local second = H.current()
local tw2, iw2 = second:windows()
local function statusline(win)
  return vim.api.nvim_eval_statusline(vim.wo[win].statusline, { winid = win }).str
end
R.wide = { width = vim.api.nvim_win_get_width(tw2 --[[@as integer]]), hints = statusline(iw2) }
vim.o.columns = 60
vim.cmd("doautocmd VimResized") -- a UI's resize fires it; a headless Neovim's `columns` does not
R.narrow = { width = vim.api.nvim_win_get_width(tw2 --[[@as integer]]), hints = statusline(iw2) }

-- `:q` in the tab's code window closes the tab, chat and all (no chat left alone, no two more `:q`).
vim.api.nvim_set_current_win(vim.fn.win_getid(1))
R.q_from = vim.api.nvim_buf_get_name(0)
R.tabs_before_q = vim.fn.tabpagenr("$")
vim.cmd("quit")
R.tabs_after_q = vim.fn.tabpagenr("$")
R.errors = vim.tbl_filter(function(n) return (n.level or 0) >= vim.log.levels.WARN end, R.notifications)
H.finish()
