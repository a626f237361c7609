-- A range prompt with #file and a prompt with #buffer (📎 lines, unsaved text as context), a stopped turn, a
-- second tab's chat with its own session, :OllieNew, and :OllieSessions resuming the first session rendered from
-- its history (the same 📎 lines).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

-- What the plugin sends the daemon: its contexts go as the `context` list, never as blocks of its own.
local client = require("ollie.client")
local real_request = client.request
R.wire = {}
client.request = function(method, params, cb)
  if method == "ollie/submit" or method == "ollie/queue" then
    table.insert(R.wire, { method = method, text = params.text, context = params.context or vim.NIL,
      seen = params.seen or vim.NIL })
  end
  return real_request(method, params, cb)
end

vim.fn.writefile({ "extra one", "extra two" }, "extra.txt")
vim.cmd.edit("code.py")
-- Unsaved text: the daemon must see the buffer, not the file on disk.
vim.api.nvim_buf_set_lines(0, 1, 2, false, { "    return a * b  # unsaved edit" })
vim.cmd("2,3Ollie explain this, see #file:notes.txt and #file:extra.txt")
H.wait_chat("first answer")
H.wait_chat("_%(end%)_")
local first = H.current()
R.first = first.session
R.range_chat = H.chat.text()

-- Stop: a slow turn is interrupted at once; what it said so far stays.
vim.cmd("Ollie tell me a long story about #buffer")
H.wait_chat("Once")
-- A prompt queued meanwhile: the stop holds it (shown so), and the send key on an empty prompt sends it on.
local function pending()
  return vim.tbl_map(function(p) return p.text end, first.transcript.pending)
end
H.type_and_press("and then a held one on #file:notes.txt")
H.wait(function() return #pending() == 1 end, "the queued prompt")
R.queued_line = pending()[1]
vim.cmd("OllieStop")
H.wait_chat("_%(interrupted%)_") -- the story streams for 45 s: only the stop ends it within the wait
H.wait(function() return (pending()[1] or ""):find("⏸ held: ", 1, true) end, "the held prompt")
R.held_line = pending()[1]
R.held_chat = H.chat.text()
H.type_and_press("")
H.wait_chat("held answer")
H.wait_chat("held answer\n\n_%(end%)_")
R.pending_after_run = pending()

-- Another tabpage has a chat (and a session) of its own; events do not cross.
vim.cmd("tabnew")
vim.cmd("Ollie in another tab")
H.wait_chat("second tab answer")
R.second_tab_session = H.current().session
R.second_tab_chat = H.chat.text()
vim.cmd("tabprevious")
R.first_tab_chat = H.chat.text()

-- :OllieNew empties this tab's chat; :OllieSessions (async picker) resumes the first session.
vim.cmd("OllieNew")
-- An event of the session left that comes while the new one is asked for (its turn streaming on): held, as the
-- prompts typed meanwhile are, and never drawn in the new session.
first:on_event({ session = R.first, seq = 1000000, role = "assistant", content = "a word of the session left" })
H.wait(function() return first.session ~= R.first and first.redrawing == nil end, "the new session drawn")
R.second = first.session
R.new_chat = H.chat.text()
local seen = {}
H.pick_id(R.first, seen)
vim.cmd("OllieSessions")
H.wait_chat("first answer")
R.picker_prompt, R.picker_labels = seen.prompt, seen.labels
R.switched = first.session
R.resumed_chat = H.chat.text()
H.finish()
