-- A user wipes (:bw) or deletes (:bd) the chat's buffers, as they would any buffer: the chat comes back whole,
-- with its conversation, also when that happens while a turn streams.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd("Ollie first question")
H.wait_chat("first answer.*_%(end%)_")
-- :bw, then at once a prompt (before the plugin had a turn of the loop to make anything anew).
vim.cmd("bwipeout! " .. H.current().transcript.buf)
R.errmsg_after_wipe = vim.v.errmsg
vim.cmd("Ollie second question")
H.wait_chat("second answer.*_%(end%)_")
R.after_wipe = H.chat.text()
R.transcript_windows = #vim.fn.win_findbuf(H.current().transcript.buf)
-- :bd of the input area, then the user types a prompt there (it is back, with its keys).
vim.cmd("bdelete! " .. H.current().input_buf)
H.settle()
vim.cmd("OllieChat")
H.type_and_press("third question")
H.wait_chat("third answer.*_%(end%)_")
-- :bw of the transcript while a reply streams: the rest streams into the new one; at the end the whole turn shows.
vim.cmd("Ollie fourth question")
H.wait_chat("Streaming")
local wiped = H.current().transcript.buf
vim.cmd("bwipeout! " .. wiped)
H.wait(function() return H.current().transcript.buf ~= wiped end, "the transcript made anew")
H.settle() -- what the plugin schedules after that (a window it would open) has run
R.windows_mid_turn = #vim.fn.win_findbuf(H.current().transcript.buf)
-- Its end, and the whole turn drawn again from the history (the new transcript showed it from `…` on).
H.wait(function()
  local c = H.current()
  return not c.running and c.redrawing == nil and not c.redraw_at_end
end, "the fourth turn's end drawn", 20000)
H.wait_chat("fourth answer ends here")
H.settle() -- an error of a callback the turn's end scheduled is in errmsg by then
R.errmsg = vim.v.errmsg
vim.cmd("OllieChat")
H.finish()
