-- The chat buffer: renders the conversation as it streams and takes the next prompt at its end.
local config = require("ollie.config")

local M = {}

M.PROMPT_HEADER = "## You"
M.REPLY_HEADER = "## ollie"

---@type integer|nil
M.bufnr = nil
local streaming = false -- the last line is an open assistant/reasoning line that deltas extend
local open_role = nil

local function valid()
  return M.bufnr and vim.api.nvim_buf_is_valid(M.bufnr)
end

local function line_count()
  return vim.api.nvim_buf_line_count(M.bufnr)
end

local function set_lines(first, last, lines)
  vim.bo[M.bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(M.bufnr, first, last, false, lines)
end

---Keep chat windows at the end as text arrives, except one where the user moved up to read.
---@param before integer the line count before the new text
local function follow(before)
  for _, win in ipairs(vim.fn.win_findbuf(M.bufnr)) do
    local focused = vim.api.nvim_get_current_win() == win
    local at_end = vim.api.nvim_win_get_cursor(win)[1] >= before
    if not focused or (at_end and vim.fn.mode() ~= "i") then
      vim.api.nvim_win_set_cursor(win, { line_count(), 0 })
    end
  end
end

---The prompt area: the lines after the last "## You" header, with the header's line number.
---@return integer header_line 0-based, string text
function M.input()
  local lines = vim.api.nvim_buf_get_lines(M.bufnr, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i] == M.PROMPT_HEADER then
      local body = vim.list_slice(lines, i + 1, #lines)
      return i - 1, vim.trim(table.concat(body, "\n"))
    end
  end
  return #lines, ""
end

local function ensure_input_header()
  local lines = vim.api.nvim_buf_get_lines(M.bufnr, -3, -1, false)
  for _, l in ipairs(lines) do
    if l == M.PROMPT_HEADER then
      return
    end
  end
  set_lines(line_count(), line_count(), { "", M.PROMPT_HEADER, "" })
end

---Replace the input area with the sent prompt and open the reply section.
---@param text string
function M.begin_turn(text)
  if not valid() then
    return
  end
  ensure_input_header()
  local header = M.input()
  set_lines(header + 1, -1, vim.split(text, "\n", { plain = true }))
  local before = line_count()
  set_lines(line_count(), line_count(), { "", M.REPLY_HEADER, "" })
  streaming, open_role = true, "assistant"
  follow(before)
end

local function append_text(text, role)
  if not streaming or open_role ~= role then
    set_lines(line_count(), line_count(), { role == "reasoning" and "> " or "" })
    streaming, open_role = true, role
  end
  local parts = vim.split(text, "\n", { plain = true })
  local last = line_count() - 1
  local cur = vim.api.nvim_buf_get_lines(M.bufnr, last, last + 1, false)[1] or ""
  parts[1] = cur .. parts[1]
  if role == "reasoning" then
    for i = 2, #parts do
      parts[i] = "> " .. parts[i]
    end
  end
  set_lines(last, last + 1, parts)
end

local function add_block(lines)
  set_lines(line_count(), line_count(), lines)
  streaming, open_role = false, nil
end

local function fold(first, last)
  if last <= first then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(M.bufnr)) do
    vim.api.nvim_win_call(win, function()
      vim.cmd(string.format("silent! %d,%dfold", first, last))
    end)
  end
end

---Render one `ollie/event`.
---@param ev {seq: integer, role: string, name: string|nil, content: string}
function M.on_event(ev)
  if not valid() then
    return
  end
  local role, content = ev.role, ev.content or ""
  local before = line_count()
  if role == "assistant" or role == "reasoning" then
    append_text(content, role)
  elseif role == "call" then
    add_block({ "", string.format("▸ %s %s", ev.name or "tool", content:gsub("\n", " ")) })
  elseif role == "tool" then
    local first = line_count() + 1
    local lines = {}
    local ok, decoded = pcall(vim.json.decode, content)
    local text = content
    local is_error = false
    if ok and type(decoded) == "table" and decoded.content then
      local texts = {}
      for _, c in ipairs(decoded.content) do
        table.insert(texts, c.text or "")
      end
      text, is_error = table.concat(texts, "\n"), decoded.isError == true
    end
    table.insert(lines, string.format("  ◂ %s%s", ev.name or "tool", is_error and " (error)" or ""))
    for _, l in ipairs(vim.split(text, "\n", { plain = true })) do
      table.insert(lines, "  │ " .. l)
    end
    add_block(lines)
    if not is_error then
      fold(first, line_count())
    end
  elseif role == "error" then
    add_block({ "", "**error:** " .. content })
  elseif role == "info" or role == "exec" then
    local lines = { "" }
    for _, l in ipairs(vim.split(content, "\n", { plain = true })) do
      table.insert(lines, l)
    end
    add_block(lines)
  elseif role == "limitretry" then
    add_block({ "", "_rate limited, retrying: " .. content .. "_" })
  elseif role == "turn" and content ~= "start" then
    add_block({ "", string.format("_(%s)_", content) })
    ensure_input_header()
  end
  follow(before)
end

---Clear the buffer and render a saved conversation (from `ollie/context`).
---@param messages table[]
function M.render_history(messages)
  if not valid() then
    return
  end
  set_lines(0, -1, { "# ollie chat", "" })
  for _, m in ipairs(messages or {}) do
    if m.role == "user" then
      add_block({ M.PROMPT_HEADER })
      add_block(vim.split(m.content or "", "\n", { plain = true }))
    elseif m.role == "assistant" then
      add_block({ "", M.REPLY_HEADER })
      if (m.content or "") ~= "" then
        add_block(vim.split(m.content, "\n", { plain = true }))
      end
      for _, c in ipairs(m.tool_calls or {}) do
        add_block({ string.format("▸ %s %s", c.name, (c.arguments or ""):gsub("\n", " ")) })
      end
    elseif m.role == "tool" then
      M.on_event({ role = "tool", name = m.name, content = m.content })
    end
  end
  ensure_input_header()
end

---Create (once) and show the chat buffer.
---@param focus boolean|nil move the cursor into the chat window (else stay where the user is)
---@return integer bufnr
function M.open(focus)
  if not valid() then
    M.bufnr = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(M.bufnr, "ollie://chat")
    vim.bo[M.bufnr].buftype = "nofile"
    vim.bo[M.bufnr].bufhidden = "hide"
    vim.bo[M.bufnr].swapfile = false
    vim.bo[M.bufnr].filetype = "ollie"
    set_lines(0, -1, { "# ollie chat", "", M.PROMPT_HEADER, "" })
    local send = function() require("ollie").send_input() end
    vim.keymap.set("n", "<CR>", send, { buffer = M.bufnr, desc = "ollie: send the prompt" })
    vim.keymap.set("i", "<C-s>", send, { buffer = M.bufnr, desc = "ollie: send the prompt" })
    vim.keymap.set("n", "<C-c>", function() require("ollie").stop() end, { buffer = M.bufnr, desc = "ollie: stop" })
  end
  local from = vim.api.nvim_get_current_win()
  if #vim.fn.win_findbuf(M.bufnr) == 0 then
    local c = config.options.chat
    if c.position == "tab" then
      vim.cmd("tabnew")
    elseif c.position == "bottom" then
      vim.cmd("botright " .. c.height .. "split")
    else
      vim.cmd((c.position == "left" and "topleft " or "botright ") .. c.width .. "vsplit")
    end
    vim.api.nvim_win_set_buf(0, M.bufnr)
    vim.wo.foldmethod = "manual"
    vim.wo.wrap = true
    vim.wo.linebreak = true
    if not focus and vim.api.nvim_win_is_valid(from) then
      vim.api.nvim_set_current_win(from)
    end
  elseif focus then
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(M.bufnr)[1])
  end
  return M.bufnr
end

---The whole chat as text (for tests and yanking).
function M.text()
  if not valid() then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(M.bufnr, 0, -1, false), "\n")
end

return M
