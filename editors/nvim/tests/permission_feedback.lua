-- An edit in "ask" mode: the ollie/permission question shows the step and its diff; the user rejects it
-- with feedback, and the model gets the feedback as the step's result.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H

U.answer_select(function(item)
  if type(item) == "table" and item.id == "reject_with_feedback" then
    H.results.preview = vim.deepcopy(require("ollie.permission").last_preview.lines)
    H.results.status_asked = require("ollie.chatwin").status(vim.api.nvim_get_current_win())
    return true
  end
  return false
end)
vim.ui.input = function(opts, on_confirm)
  H.results.input_prompt = opts.prompt
  on_confirm("keep it as addition, fix the name instead")
end

-- The daemon runs with OLLIE_APPROVAL=auto: the command turns asking on.
vim.cmd("OllieApproval ask")
U.wait(function() return U.notified("approval: ask") end, "the approval notification")
H.results.approval = U.call("ollie/state", {}).approval
H.results.completion = vim.fn.getcompletion("OllieApproval a", "cmdline")

-- Asked from the chat, as a user asks: the rejection and its feedback show under the step, live and resumed.
vim.cmd.edit("code.py")
require("ollie").ask("make mul multiply")
local chat = require("ollie").current()
U.wait(function() return chat.transcript:text():find("left it alone", 1, true) ~= nil end, "the answer")
H.results.live_chat = chat.transcript:text()
H.results.status_after = require("ollie.chatwin").status(vim.api.nvim_get_current_win())
local switched = false
chat:switch(chat.session, function() switched = true end)
U.wait(function() return switched end, "the resumed conversation")
H.results.resumed_chat = chat.transcript:text()
H.results.code_after = vim.fn.readfile("code.py")
-- A plain "Reject" (no feedback), and a multi-line feedback.
local render = require("ollie.render")
H.results.plain_rejection = render.rejection("rejected: the user did not allow 'Run `ls`'; it was not run.")
H.results.two_line_rejection = render.rejection(
  "rejected: the user did not allow 'x'; it was not run.\nThe user's feedback: first\nsecond")
-- Where other edits land: a new file, lines added at the end, two hunks apart (the lines of the file as it is now).
local place = require("ollie.permission").diff_place
H.results.places = {
  place({ path = "new.py", oldText = vim.NIL, newText = "x = 1\n" }),
  place({ path = "a.py", oldText = "a\nb\n", newText = "a\nb\nc\n" }),
  place({ path = "sub/b.py", oldText = "1\n2\n3\n4\n5\n6\n", newText = "1\nTWO\n3\n4\nFIVE\n6\n" }),
}
-- A program's question shows its code whole (the title has its first line alone); one that all runs outside, so.
local preview = require("ollie.permission").preview_lines
local code = "echo one > proof\nrm -rf ~/stuff\n\nprint(2)"
H.results.code_preview = preview({ step = { id = "c.1", kind = "execute", title = "Run `echo one > proof …`",
  code = code } })
H.results.outside_preview = preview({ step = { id = "c.2", kind = "execute", title = "Run `echo x`",
  outside = { "echo x" } } })
-- The float is gone once answered.
H.results.floats_left = #vim.tbl_filter(function(w)
  return vim.api.nvim_win_get_config(w).relative ~= ""
end, vim.api.nvim_list_wins())
H.results.question = H.results.selects[1]

-- :OllieApproval with no mode: pick one, the current one marked.
U.answer_select(function(item) return item == "auto-edit" end)
vim.cmd("OllieApproval")
U.wait(function() return U.notified("approval: auto-edit") end, "the picked approval mode")
H.results.mode_labels = H.results.selects[1].labels
H.results.approval_after_pick = U.call("ollie/state", {}).approval
H.finish()
