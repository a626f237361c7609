-- A turn that begins while the chat is drawn again from the history (its conversation asked for at a turn's end):
-- its prompt in the history drawn is shown answered in the end, not as a turn that was interrupted.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local H = dofile(vim.fs.joinpath(here, "helpers.lua"))
local crossing = dofile(vim.fs.joinpath(here, "crossing.lua"))
local client = require("ollie.client")

vim.cmd("Ollie tell a story")
H.wait_chat("Once upon")
local chat = H.current()
-- Drawn again while it streams (as when the session is picked again): drawn whole once the turn has ended.
chat:switch(chat.session)
H.wait(function() return chat.redrawing == nil and chat.running end, "the streaming session drawn again")

-- At the story's end the chat asks for its conversation again. Before that question goes out, a prompt sent to the
-- session (by another tab, or a queued one) has its turn begin and its reply start: the history answered holds it.
crossing.intercept(function(send)
  client.request("ollie/submit", { session = chat.session, text = "and a follow-up" }, function() end)
  -- The follow-up's first words (its prompt is in the history then).
  crossing.once(function() return crossing.held("assistant") > 0 end, function()
    send(function(deliver)
      deliver()
      H.release("follow-up") -- drawn while the follow-up still streams: its prompt in the history, unanswered
    end)
  end)
end)
H.release("story")
H.wait_chat("follow%-up answer", 30000)
H.wait(function() return not chat.running and chat.redrawing == nil and not chat.redraw_at_end end,
  "the follow-up's end drawn")
H.results.errors = vim.v.errmsg
H.finish()
