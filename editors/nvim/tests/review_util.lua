-- Shared by the review/permission/health/pickers/editor scenarios (run by tests/editors/test_nvim_review.py).
-- Self-contained (not helpers.lua): these scenarios use no chat window.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)))
vim.opt.rtp:prepend(plugin_dir)
vim.cmd.runtime("plugin/ollie.lua")

local H = { results = { notifications = {} } }
-- Keep what the plugin tells the user, for the assertions (and for debugging a failure).
vim.notify = function(msg, level)
  table.insert(H.results.notifications, { msg = msg, level = level })
end
require("ollie").setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")) })
local requests = require("ollie.requests")

---Write the results as JSON for the pytest side, then quit.
function H.finish()
  local f = assert(io.open(os.getenv("OLLIE_TEST_OUT"), "w"))
  f:write(vim.json.encode(H.results))
  f:close()
  vim.cmd("qall!")
end

local U = { H = H }

---Wait (in the test only) until `cond()` is true; record a failure naming `what` and finish otherwise.
---@param cond fun(): any
---@param what string
---@param timeout_ms integer|nil
function U.wait(cond, what, timeout_ms)
  if not vim.wait(timeout_ms or 30000, cond, 20) then
    H.results.failure = "timed out waiting for " .. what .. "\nnotifications: " .. vim.inspect(H.results.notifications)
    H.finish()
  end
end

---The first notification whose text contains `text`, or nil.
---@param text string
function U.notified(text)
  for _, n in ipairs(H.results.notifications) do
    if n.msg:find(text, 1, true) then
      return n
    end
  end
end

---Send a request for the current session and wait for its answer: result, err.
---@param method string
---@param params table|nil
function U.call(method, params, timeout_ms)
  local done, res, e = false, nil, nil
  requests.call(method, params, function(r) done, res = true, r end, function(err) done, e = true, err end)
  U.wait(function() return done end, method, timeout_ms or 60000)
  return res, e
end

---Answer every vim.ui.select by picking the first item `pick(item, label)` accepts; records what was shown.
---@param pick fun(item: any, label: string): boolean
function U.answer_select(pick)
  H.results.selects = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for i, item in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    table.insert(H.results.selects, { prompt = opts.prompt, labels = labels })
    for i, item in ipairs(items) do
      if pick(item, labels[i]) then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end
end

---Ask `prompt` in a chat, keep its transcript once the turn ends (`results.chat`), close it, then open
---:OllieChanges and keep the list's lines (`results.list`).
---@param prompt string
function U.changes_after(prompt)
  require("ollie").ask(prompt)
  local chat = require("ollie").current()
  U.wait(function() return chat.transcript:text():find("_(end)_", 1, true) ~= nil end, "the turn to end")
  H.results.chat = chat.transcript:text()
  chat:close()
  vim.cmd("OllieChanges")
  U.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
  H.results.list = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

return U
