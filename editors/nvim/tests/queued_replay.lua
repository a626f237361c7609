-- Queued prompts' turns that cross the chat's drawing from the history: the history answered before a turn began is
-- drawn with that turn's heading and answer from the events held meanwhile, whatever its prompt says (the same as the
-- one before, or the start of it); a history that holds turns already is drawn with each once.
local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local H = dofile(vim.fs.joinpath(here, "helpers.lua"))
local crossing = dofile(vim.fs.joinpath(here, "crossing.lua"))

local function idle()
  local chat = H.current()
  H.wait(function() return not chat.running and chat.redrawing == nil end, "the chat idle and drawn", 30000)
end

---`first`'s turn, stopped as it streams, with `queued` (a list) queued behind it and held by the stop.
local function stopped_with(first, reply, queued)
  vim.cmd("Ollie " .. first)
  H.wait_chat(reply)
  local chat = H.current()
  for _, text in ipairs(queued) do
    H.type_and_press(text) -- a turn runs: Enter queues it
  end
  H.wait(function() return #chat.transcript.pending == #queued end, "the prompts queued")
  chat:stop()
  H.wait(function() return chat.queue_held end, "the stop to hold the queued prompts")
  idle()
end

-- 1. The same prompt again ("continue" twice): the history is read before the queued one's turn begins, and that
-- turn's first events come before the answer. Before, its prompt was found in the history (the first "continue"):
-- its heading was lost and its answer's first words dropped.
stopped_with("continue", "The first answer", { "continue" })
crossing.turn_begins_before_the_answer()
H.wait_chat("The second answer.")
idle()
H.results.same = H.chat.text()

-- 2. A prompt the last one starts with.
stopped_with("fix the tests please", "The third answer", { "fix the tests" })
crossing.turn_begins_before_the_answer()
H.wait_chat("The fourth answer.")
idle()
H.results.prefix = H.chat.text()

-- 3. Two queued turns run, and end, before the history is read: it holds both. Before, the first one's prompt was
-- not the history's last: both were drawn again from the held events.
stopped_with("and more", "The fifth answer", { "first queued", "second queued" })
crossing.turns_end_before_the_history_is_read(2)
idle()
H.results.held = H.chat.text()
H.results.errors = vim.v.errmsg
H.finish()
