-- :OllieFork [turn]: the chat switches to a new session going on from a copy of its conversation (up to the end of
-- turn n), titled "<title> (fork)", each copied turn's "✎ N files changed" line opening its changes; the session it
-- came from stays as it was and comes back with :OllieSessions.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results
vim.o.columns = 200 -- the chat takes half: room for the status and a title

local bar = H.statusline

vim.cmd("Ollie first prompt")
H.wait_chat("answer one")
H.wait_chat("_%(end%)_")
local c = H.current()
H.type_and_press("second prompt")
H.wait_chat("answer two")
H.wait(function() return not c.running end, "the second turn's end")
local source = c.session

vim.cmd("OllieFork 1")
H.wait(function() return c.session ~= source and bar():find("(fork)", 1, true) ~= nil end, "the chat on the fork")
-- The session switches first, then the chat is drawn from the fork's history: wait for that, not for old text.
H.wait(function()
  local text = H.chat.text()
  return text:find("answer one", 1, true) ~= nil and text:find("second prompt", 1, true) == nil
end, "the fork's conversation in the chat")
R.fork = { session = c.session, source = source, chat = H.chat.text(), bar = bar() }
-- <CR> on the copied turn's line: its changes, reviewed from the fork.
vim.o.columns = 80 -- (wider, headless Neovim's grid failed an assertion drawing the list)
local tw = c:windows()
vim.api.nvim_set_current_win(tw)
vim.api.nvim_win_set_cursor(tw, { H.expect(H.row_of("✎ 1 file changed — :OllieChanges"), "the changes line") + 1, 0 })
vim.cmd.normal(vim.keycode("<CR>"))
H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the fork's changes list")
H.wait(function() return #vim.api.nvim_buf_get_lines(0, 0, -1, false) > 1 end, "the fork's changed files")
R.fork_list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.cmd.close()

vim.cmd("OllieFork 7") -- no such turn: said, and the chat stays on the fork
H.wait_notified("no turn 7", "the refusal of turn 7")
R.after_refusal = c.session

-- The picker lists both; picking the source shows its whole conversation again.
local seen = {}
H.pick_id(source, seen)
vim.cmd("OllieSessions")
H.wait(function() return c.session == source end, "the chat back on the source")
H.wait_chat("answer two")
R.picker = seen.labels
R.source_chat = H.chat.text()
H.finish()
