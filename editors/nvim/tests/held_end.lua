-- A turn's end while the chat is drawn again from the history (which keeps no stop reason but an interrupt): its
-- end line still says how it ended, whether the end was held during the drawing or came just before it.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd("Ollie write a long story")
H.wait_chat("_%(max_tokens")
local chat = H.current()

---Wait until the chat is drawn again; its transcript then.
local function drawn()
  H.wait(function() return chat.redrawing == nil end, "the chat drawn again")
  return H.chat.text()
end

-- Ended during the drawing: its end event is held until the history is drawn (the daemon sent it meanwhile).
chat:redraw()
chat:on_event({ session = chat.session, role = "turn", content = "max_tokens" })
H.results.during = drawn()

-- Ended while the chat showed the turn streaming (drawn again then): the history is drawn once it has ended.
chat.running, chat.redraw_at_end = true, true
chat:on_event({ session = chat.session, role = "turn", content = "max_tokens" })
H.results.after = drawn()

-- A turn that ended in an error before any reply: the history draws no end line for it at all.
vim.cmd("Ollie go on")
H.wait_chat("_%(error%)_")
chat:redraw()
chat:on_event({ session = chat.session, role = "turn", content = "error" })
H.results.error = drawn()
H.finish()
