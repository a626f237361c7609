-- Shared set-up for the headless Neovim scenarios run by tests/editors/test_nvim.py.
-- (vim.wait is fine here: it is the test waiting, never the plugin.)
local H = {}

local plugin_dir = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)))
vim.opt.rtp:prepend(plugin_dir)
vim.cmd.runtime("plugin/ollie.lua")
vim.cmd.runtime("ftplugin/ollie.lua") -- no `filetype plugin on` under -u NONE: load it for the chat

H.results = { notifications = {} }
-- Keep what the plugin tells the user, for the assertions (and for debugging a failure).
vim.notify = function(msg, level)
  table.insert(H.results.notifications, { msg = msg, level = level })
end
H.ollie = require("ollie")
H.ollie.setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")), chat = { position = "right" } })

---The transcript of the current tab's chat.
H.chat = {
  text = function()
    local c = H.ollie.current()
    return c and c.transcript:text() or ""
  end,
}

---The current tab's chat.
---@return ollie.Chat
function H.current()
  return assert(H.ollie.current(), "no chat in this tab")
end

---The current chat's transcript window's statusline, as drawn ("" when the chat shows no window).
function H.statusline()
  local tw = H.current():windows()
  return tw and vim.api.nvim_eval_statusline(vim.wo[tw].statusline, { winid = tw }).str or ""
end

---Wait until the chat's transcript matches `pattern` (a Lua pattern); record a failure otherwise.
function H.wait_chat(pattern, timeout_ms)
  return H.wait(function() return H.chat.text():find(pattern) ~= nil end, string.format("%q in the chat", pattern),
    timeout_ms)
end

---The text of the first notification (vim.notify) containing `text` (plain), or nil.
---@param text string
---@return string|nil
function H.notified(text)
  for _, n in ipairs(H.results.notifications) do
    if n.msg:find(text, 1, true) then
      return n.msg
    end
  end
end

---Wait until a notification contains `text`; its text.
---@param text string
---@param what string
---@param timeout_ms integer|nil
---@return string
function H.wait_notified(text, what, timeout_ms)
  H.wait(function() return H.notified(text) ~= nil end, what, timeout_ms)
  return H.notified(text) --[[@as string]]
end

---Wait until `cond()`; record a failure naming `what` (with the transcript) and finish otherwise.
function H.wait(cond, what, timeout_ms)
  local ok = vim.wait(timeout_ms or 30000, cond, 20)
  if not ok then
    H.results.failure = string.format("timed out waiting for %s; chat:\n%s\nnotifications: %s", what, H.chat.text(),
      vim.inspect(H.results.notifications))
    H.finish()
  end
  return ok
end

---Let the callbacks scheduled so far run, and those they schedule in turn (the plugin moves windows from
---vim.schedule): a wait for them, not for a guessed time.
function H.settle()
  local settled = false
  vim.schedule(function() vim.schedule(function() settled = true end) end)
  H.wait(function() return settled end, "the scheduled callbacks")
end

---`value`, or a recorded failure naming `what` (with the transcript) when it is nil or false.
function H.expect(value, what)
  if not value then
    H.wait(function() return false end, what, 1)
  end
  return value
end

---Type into the current chat's input area and press a configured key there (as a user would).
---@param text string
---@param key string|nil the normal-mode key (default: the send key)
function H.type_and_press(text, key)
  local c = H.current()
  c:focus_input(false)
  vim.api.nvim_buf_set_lines(c.input_buf, 0, -1, false, vim.split(text, "\n"))
  vim.api.nvim_feedkeys(vim.keycode(key or "<CR>"), "mx", false)
end

---The highlight groups of the transcript's extmarks covering a 0-based row.
---@param row integer
---@return string[]
function H.groups_at(row)
  local buf = H.current().transcript.buf
  local ns = require("ollie.render").ns
  local groups = {}
  local marks = vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true, overlap = true })
  for _, m in ipairs(marks) do
    if m[4].hl_group then
      table.insert(groups, m[4].hl_group)
    end
  end
  return groups
end

---The 0-based row of the first transcript line equal to `line` (after row `after`), or nil.
function H.row_of(line, after)
  local lines = vim.api.nvim_buf_get_lines(H.current().transcript.buf, 0, -1, false)
  for i = (after or -1) + 2, #lines do
    if lines[i] == line then
      return i - 1
    end
  end
  return nil
end

---The transcript's lines in which its window, at any width from 30 to 60 columns, wraps one of `words` across two
---screen rows (Neovim's 'breakat' breaks after a "-", ":" or "/": `<C-` above `s>`), each with that width.
---@param words string[]
---@return string[]
function H.split_words(words)
  local buf = H.current().transcript.buf
  local win, split = vim.fn.bufwinid(buf), {}
  local width = vim.api.nvim_win_get_width(win)
  for w = 30, 60 do
    vim.api.nvim_win_set_width(win, w)
    for row, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      for _, word in ipairs(words) do
        local s, e = line:find(word, 1, true)
        if s then
          vim.api.nvim_win_set_cursor(win, { row, e - 1 }) -- (in view: screenpos() knows rows in view only)
          vim.cmd("redraw")
          if vim.fn.screenpos(win, row, s).row ~= vim.fn.screenpos(win, row, e).row then
            table.insert(split, w .. ": " .. line)
          end
        end
      end
    end
  end
  vim.api.nvim_win_set_width(win, width)
  return split
end

---Answer the next vim.ui.select with the item whose id is `id` (cancel when none); `seen` gets its prompt and labels.
---@param id string
---@param seen table|nil
function H.pick_id(id, seen)
  vim.ui.select = function(items, opts, on_choice)
    if seen then
      seen.prompt = opts.prompt
      seen.labels = vim.tbl_map(opts.format_item, items)
    end
    for _, item in ipairs(items) do
      if item.id == id then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
end

---End the scripted reply the test holds by `name` (test_nvim.py's `released`): what the scenario does while it
---streams is done, however long that took.
---@param name string
function H.release(name)
  vim.fn.writefile({}, vim.fs.joinpath(vim.fs.dirname(os.getenv("OLLIE_TEST_OUT")), name .. ".released"))
end

---Write the results as JSON for the pytest side, then quit.
function H.finish()
  H.results.chat = H.chat.text()
  local f = assert(io.open(os.getenv("OLLIE_TEST_OUT"), "w"))
  f:write(vim.json.encode(H.results))
  f:close()
  vim.cmd("qall!")
end

return H
