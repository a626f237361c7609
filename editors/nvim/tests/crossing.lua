-- The chat drawn again from the history while queued prompts' turns cross its `ollie/context` answer: the events that
-- come meanwhile are held, as when they cross the answer on the wire. Shared by queued_replay.lua and the TUI test
-- (tests/editors/test_nvim_tui.py, through `:lua dofile(...)`), and end_race.lua.
local client = require("ollie.client")

local M = {}

local function chat()
  return assert(require("ollie").current(), "no chat in this tab")
end

---Run `fn` once `cond()` holds, without waiting on the UI thread (it runs inside a request's callback).
function M.once(cond, fn)
  if cond() then
    return fn()
  end
  vim.defer_fn(function() M.once(cond, fn) end, 10)
end

---How many held events have `role` (and `content`).
function M.held(role, content)
  local n = 0
  for _, ev in ipairs(chat().redrawing and chat().redrawing.events or {}) do
    if ev.role == role and (content == nil or ev.content == content) then
      n = n + 1
    end
  end
  return n
end

---Hand the chat's next `ollie/context` request to `around(send)`: `send(deliver_later)` sends it, and
---`deliver_later(deliver)` gets the answer's drawing, to run when it likes.
function M.intercept(around)
  local request = client.request
  client.request = function(method, params, cb)
    if method ~= "ollie/context" then
      return request(method, params, cb)
    end
    client.request = request
    around(function(deliver_later)
      request(method, params, function(err, res)
        deliver_later(function() cb(err, res) end)
      end)
    end)
  end
end

local function redraw(around)
  M.intercept(around)
  chat():redraw()
end

---The history is read while the prompts a stop held wait; they are sent on, and the answer is drawn once the first
---one's turn has begun (its prompt and first words held).
function M.turn_begins_before_the_answer()
  redraw(function(send)
    send(function(deliver)
      chat():run_queue()
      M.once(function() return M.held("user") > 0 and M.held("assistant") > 0 end, deliver)
    end)
  end)
end

---The prompts a stop held are sent on, and the history is read once `turns` of their turns have ended: it holds them.
---@param turns integer
function M.turns_end_before_the_history_is_read(turns)
  redraw(function(send)
    chat():run_queue()
    M.once(function() return M.held("turn", "end") == turns end, function() send(function(deliver) deliver() end) end)
  end)
end

return M
