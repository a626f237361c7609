-- Editor context of a prompt: `#buffer`, `#selection`, `#file:path` and ranges, their compact labels
-- (`📎 calc.py:11-13`), and the `<editor-context>` blocks of saved prompts read back as labels.
local M = {}

---@class ollie.Context
---@field uri string
---@field range {start: {line: integer, character: integer}, ["end"]: {line: integer, character: integer}}|nil
---@field text string the lines (for a block the client writes itself; the daemon reads its own copy)
---@field languageId string|nil
---@field label string the compact line the transcript shows (without the 📎)

M.ICON = "📎"

-- What `#` completes to in the input area: the tag and what it sends.
M.TAGS = {
  { word = "#buffer", menu = "the file in the window you came from" },
  { word = "#selection", menu = "the last visual selection there" },
  { word = "#file:", menu = "a file by path (#file:src/app.py)" },
}

local function display(path)
  return vim.fn.fnamemodify(path, ":.")
end

---Context for lines `line1..line2` (1-based) of a buffer.
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return ollie.Context
function M.range(buf, line1, line2)
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local name = display(vim.api.nvim_buf_get_name(buf))
  return {
    uri = vim.uri_from_bufnr(buf),
    range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } },
    text = table.concat(lines, "\n"),
    languageId = vim.bo[buf].filetype,
    label = line1 == line2 and string.format("%s:%d", name, line1) or string.format("%s:%d-%d", name, line1, line2),
  }
end

---Context for a whole buffer.
---@param buf integer
---@return ollie.Context
function M.buffer(buf)
  local ctx = M.range(buf, 1, math.max(1, vim.api.nvim_buf_line_count(buf)))
  ctx.label = display(vim.api.nvim_buf_get_name(buf))
  return ctx
end

---Context for a file by path: its buffer when loaded (unsaved text), else its text on disk.
---@param path string
---@return ollie.Context|nil ctx, string|nil err
function M.file(path)
  local full = vim.fn.fnamemodify(path, ":p")
  local buf = vim.fn.bufnr(full)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return M.buffer(buf)
  end
  if vim.fn.filereadable(full) ~= 1 then
    return nil, "#file:" .. path .. ": no such file"
  end
  local lines = vim.fn.readfile(full)
  return {
    uri = vim.uri_from_fname(full),
    range = { start = { line = 0, character = 0 }, ["end"] = { line = #lines, character = 0 } },
    text = table.concat(lines, "\n"),
    languageId = vim.filetype.match({ filename = full }) or "",
    label = display(full),
  }
end

---The selection context of a buffer: its last visual selection (the whole buffer when it has none).
---@param buf integer
---@return ollie.Context
local function selection(buf)
  local first, last = vim.api.nvim_buf_get_mark(buf, "<")[1], vim.api.nvim_buf_get_mark(buf, ">")[1]
  if first == 0 then
    return M.buffer(buf)
  end
  return M.range(buf, first, math.max(first, last))
end

---The `#` tags of a prompt made into contexts, in the prompt's order; each tag becomes its label in the text
---(`#selection` → `calc.py:11-13`, `#buffer` → `calc.py`, `#file:a.py` → `a.py`).
---@param text string
---@param origin integer|nil the file buffer the user came from (for #buffer and #selection)
---@return string text, ollie.Context[] contexts, string|nil err
function M.parse(text, origin)
  local contexts, err = {}, nil
  local function add(ctx)
    table.insert(contexts, ctx)
    return ctx.label
  end
  local out = text:gsub("#([%w_]+)(:?)(%S*)", function(name, colon, rest)
    local tag = "#" .. name .. colon .. rest
    if name == "file" and colon == ":" and rest ~= "" then
      -- "see #file:a.py, then": the comma ends the sentence, not the path.
      local tail = ""
      local ctx, ferr = M.file(rest)
      local bare, punct = rest:match("^(.-)([,.;:!?%)]+)$")
      if not ctx and bare and bare ~= "" then
        ctx = M.file(bare)
        tail = punct
      end
      if not ctx then
        err = err or ferr
        return tag
      end
      return add(ctx) .. tail
    end
    local make = ({ buffer = M.buffer, selection = selection })[name]
    if not make or colon ~= "" then
      return nil -- not a tag of ours (#123, #region): left as typed
    end
    if not (origin and vim.api.nvim_buf_is_valid(origin)) then
      err = err or ("#" .. name .. ": no file window to take it from")
      return nil
    end
    return add(make(origin)) .. rest
  end)
  return out, contexts, err
end

---The `<editor-context>` block for a context the daemon's one `context` param cannot carry.
---@param ctx ollie.Context
---@return string
function M.block(ctx)
  local path = display(vim.uri_to_fname(ctx.uri))
  local header = "File: " .. path .. ((ctx.languageId or "") ~= "" and (" (" .. ctx.languageId .. ")") or "")
  local first, last = ctx.range.start.line + 1, ctx.range["end"].line
  return table.concat({
    "<editor-context>", header, string.format("Showing lines %d-%d:", first, math.max(first, last)),
    "```" .. (ctx.languageId or ""), ctx.text, "```", "</editor-context>",
  }, "\n")
end

---The daemon's params for contexts: the first as `context`, the others as blocks before the text.
---@param text string
---@param contexts ollie.Context[]
---@return string text, table|nil context
function M.submit_params(text, contexts)
  if #contexts == 0 then
    return text, nil
  end
  local blocks = {}
  for i = 2, #contexts do
    table.insert(blocks, M.block(contexts[i]))
  end
  local first = contexts[1]
  -- The range only: the daemon reads the lines from its copy of the document (unsaved edits included),
  -- and a resumed session's block then still says which lines they were.
  local wire = { uri = first.uri, range = first.range, languageId = first.languageId }
  if #blocks > 0 then
    text = table.concat(blocks, "\n\n") .. "\n\n" .. text
  end
  return text, wire
end

---A saved prompt split into the compact labels of its `<editor-context>` blocks and the user's text.
---@param content string
---@return string[] labels, string text
function M.split_prompt(content)
  local labels = {}
  local rest = content
  while true do
    local body, after = rest:match("^%s*<editor%-context>\n?(.-)</editor%-context>(.*)$")
    if not body then
      break
    end
    local path = body:match("File: ([^\n]-) %(") or body:match("File: ([^\n]+)") or "?"
    local a, b = body:match("Showing lines (%d+)%-(%d+)")
    local one = body:match("Showing line (%d+)")
    if a then
      table.insert(labels, string.format("%s:%s-%s", path, a, b))
    elseif one then
      table.insert(labels, string.format("%s:%s", path, one))
    elseif body:find("Selected text:", 1, true) then
      table.insert(labels, path .. " (selection)")
    else
      table.insert(labels, path)
    end
    rest = after
  end
  return labels, vim.trim(rest)
end

return M
