-- The chat as a user drives it: a prompt with #buffer streams reasoning, an answer and a tool step; a
-- follow-up typed while it streams is queued, an inject is injected; a slash command prints once; a
-- picker leaves the input alone; `gf` on a step location opens the file at the line.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd.edit("notes.txt")
local notes = vim.api.nvim_get_current_buf()
vim.cmd("Ollie please update #buffer")
R.focus_stayed = vim.api.nvim_get_current_buf() == notes
local chat = H.current()
R.windows = #vim.api.nvim_tabpage_list_wins(0)
R.transcript_modifiable = vim.bo[chat.transcript.buf].modifiable

-- Mid-stream: the first words are there before the turn ends; the user types a follow-up and presses Enter.
H.wait_chat("Working on it")
R.mid_stream_ended = H.chat.text():find("_%(end%)_") ~= nil
H.type_and_press("and then add a title")
R.input_after_queue = vim.api.nvim_buf_get_lines(chat.input_buf, 0, -1, false)
local function pending()
  return vim.tbl_map(function(p) return p.text end, chat.transcript.pending)
end
H.wait(function() return #pending() == 1 end, "the queued prompt")
R.prompt_intact = H.chat.text():find("## You\nplease update notes.txt", 1, true) ~= nil
H.type_and_press("mind the tests in #file:code.py", "<C-j>")
H.wait(function() return #pending() == 2 end, "the injected prompt")
R.pending_mid_turn = pending()
-- Bug: the waiting prompts are virtual lines under the last line; a full window, scrolled to the cursor, hid them.
local tw = vim.fn.win_findbuf(chat.transcript.buf)[1]
local tall = vim.api.nvim_win_get_height(tw)
-- Just tall enough for the last line (wrapped over as many rows as the answer streamed so far makes it) and the
-- prompts under it: a fixed 4 rows could not show them once a loaded machine had streamed the whole answer.
local last = vim.api.nvim_buf_line_count(chat.transcript.buf)
vim.api.nvim_win_set_height(tw, vim.api.nvim_win_text_height(tw, { start_row = last - 1 }).all)
chat.transcript:show_pending()
R.pending_shown = vim.api.nvim_win_text_height(tw, { start_row = vim.fn.line("w0", tw) - 1 }).all
  <= vim.api.nvim_win_get_height(tw)
vim.api.nvim_win_set_height(tw, tall)
vim.cmd.wincmd("p")
H.release("first") -- the first answer ends only now: the prompts above waited for it

H.wait_chat("follow%-up answer", 30000)
H.wait_chat("_%(end%)_.*follow%-up answer.*_%(end%)_", 30000)
R.notes_after = vim.api.nvim_buf_get_lines(notes, 0, -1, false)
R.filetype = vim.bo[chat.transcript.buf].filetype
R.statusline = H.ollie.statusline()

-- The answer after reasoning is not coloured as reasoning; the reasoning is.
local reasoning_row = H.row_of("Let me think about the notes.")
local answer_row = H.expect(H.row_of("Working on it, one moment. Working on it, one moment. "
  .. "Working on it, one moment. "), "answer line")
R.reasoning_groups = H.groups_at(reasoning_row)
R.answer_groups = H.groups_at(answer_row)

-- The step: title with its status icon, the location, folded output, a separator after it.
local step_row = H.expect(H.row_of("    ✓ Edit notes.txt"), "the step line")
R.batch_groups = H.groups_at(H.expect(H.row_of("  ✗ Edit notes.txt and 1 more"), "the batch line"))
R.failed_groups = H.groups_at(H.expect(H.row_of("    ✗ Read missing.txt"), "the failed step line"))
R.step_groups = H.groups_at(step_row)
local win = vim.fn.win_findbuf(chat.transcript.buf)[1]
local folded = 0
vim.api.nvim_win_call(win, function()
  for l = 1, vim.api.nvim_buf_line_count(chat.transcript.buf) do
    if vim.fn.foldclosed(l) ~= -1 then
      folded = folded + 1
    end
  end
end)
R.folded_lines = folded
local loc_row = H.expect(H.row_of("      → notes.txt:1"), "the location line")
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { loc_row + 1, 4 })
vim.cmd.normal("gf")
R.gf_file = vim.fn.expand("%:t")
R.gf_line = vim.api.nvim_win_get_cursor(0)[1]
-- gf on a file the text names (the prompt's `notes.txt`): it opens in the code window; the transcript stays.
vim.cmd.edit("code.py")
vim.api.nvim_set_current_win(win)
vim.api.nvim_win_set_cursor(win, { H.expect(H.row_of("please update notes.txt"), "the prompt line") + 1, 16 })
vim.cmd.normal("gf")
R.gf_text = { file = vim.fn.expand("%:t"), transcript_kept = vim.api.nvim_win_get_buf(win) == chat.transcript.buf,
  in_transcript = vim.api.nvim_get_current_win() == win }

-- A slash command typed in the input area: its output shows once.
H.type_and_press("/usage")
H.wait_chat("requests")
-- Counted once the command's answer is handled too: the output comes as an event and as that answer.
H.wait(function() return chat.commands_running == 0 end, "the /usage answer")
R.usage_count = select(2, H.chat.text():gsub("requests", ""))
R.input_after_command = vim.api.nvim_buf_get_lines(chat.input_buf, 0, -1, false)

-- A picker's choice goes to the daemon, never into the input area.
vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end
vim.cmd("OllieAgent")
H.wait_chat("agent: ")
R.input_after_picker = vim.api.nvim_buf_get_lines(chat.input_buf, 0, -1, false)

-- Completion in the input area: slash commands with descriptions, # tags.
local input = require("ollie.input")
R.complete_slash = input.items("/mo")
R.complete_hash = vim.tbl_map(function(i) return i.word end, input.items("#"))
R.complete_file = vim.tbl_map(function(i) return i.word end, input.items("#file:no"))
-- A tag that cannot be read: said in the transcript, and the typed prompt stays in the input to fix.
H.type_and_press("see #file:nope.txt")
H.wait_chat("error: #file:nope.txt: no such file")
R.input_after_bad_tag = vim.api.nvim_buf_get_lines(chat.input_buf, 0, -1, false)
R.you_headers = select(2, H.chat.text():gsub("## You", ""))
R.notifications_seen = R.notifications
H.finish()
