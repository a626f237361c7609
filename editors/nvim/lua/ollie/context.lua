-- Editor context of a prompt: `#buffer`, `#selection`, `#file:path`, `#mcp:server:uri` and ranges, their compact labels
-- (`📎 calc.py:11-13`), and the `<editor-context>` blocks of saved prompts read back as labels.
local client = require("ollie.client")
local ondisk = require("ollie.ondisk")

local M = {}

---@class ollie.Context
---@field uri string|nil (nil for an image)
---@field image string|nil an image file's full path: it goes in `images`, not as a block
---@field data string|nil the image's bytes, base64, when Neovim read it (one outside the working directory)
---@field range {start: {line: integer, character: integer}, ["end"]: {line: integer, character: integer}}|nil
---@field languageId string|nil
---@field label string the compact line the transcript shows (without the 📎): `path:first-last`, as the saved
---prompt's block says it, so a resumed chat shows the same line
---@field mention string|nil what a whole-file tag becomes in the prompt's text (the path; default: the label)
---@field selection string|nil the lines themselves, for a buffer the daemon cannot read (the transcript, a scratch)
---@field mcpServer string|nil the MCP server whose resource `uri` is (the daemon reads it through the server)

M.ICON = "📎"

-- What `#` completes to in the input area: the tag and what it sends.
M.TAGS = {
  { word = "#buffer", menu = "the file in the window you came from" },
  { word = "#selection", menu = "the last visual selection there" },
  { word = "#file:", menu = "a file by path (#file:src/app.py; an image goes as an image)" },
  { word = "#mcp:", menu = "an MCP server's resource (#mcp:server:uri)" },
}

---The resources of the session's MCP servers (`ollie/mcp/list`), for `#mcp:` completion: refreshed by
---`load_resources`, which answers later (completion shows what the last answer said).
---@type {server: string, uri: string, name: string}[]
M.resources = {}

---Ask the daemon for the MCP servers' resources (async; `M.resources` when it answers).
function M.load_resources()
  client.request("ollie/mcp/list", vim.empty_dict(), function(err, res)
    if err or not res then
      return
    end
    local found = {}
    for _, s in ipairs(res.servers or {}) do
      for _, r in ipairs(s.resources or {}) do
        table.insert(found, { server = s.name, uri = r.uri, name = r.name or "" })
      end
    end
    M.resources = found
  end)
end

---Context for resource `uri` of MCP server `server` (read by the daemon, through the server).
---@param server string
---@param uri string
---@return ollie.Context
function M.resource(server, uri)
  return { uri = uri, mcpServer = server, label = server .. ": " .. uri }
end

local function display(path)
  return vim.fn.fnamemodify(path, ":.")
end

---The compact label of lines `first..last` of a file (`calc.py:11-13`, `calc.py:4`; no lines: `calc.py`).
---@param path string
---@param first integer|nil
---@param last integer|nil
---@return string
function M.label(path, first, last)
  if not first then
    return path
  end
  return first == last and string.format("%s:%d", path, first) or string.format("%s:%d-%d", path, first, last)
end

-- The daemon sends at most this many characters of a context's lines, cut at a line's end (MAX_CONTEXT_CHARS).
local MAX_CONTEXT_CHARS = 20000

---The last of lines `first..last` the model gets once the daemon cuts their text to MAX_CONTEXT_CHARS, so that the
---label says what was sent (a 200,000-line buffer's said `1-200000` over its first 700 lines).
---@param lines string[] lines `first..` (those past the cap's reach may be left out)
---@param first integer
---@param last integer
---@return integer
function M.shown_last(lines, first, last)
  local used = 0
  for i, line in ipairs(lines) do
    -- The daemon counts code points, as strchars does, and a line's end as one ("\r\n" made "\n").
    used = used + vim.fn.strchars(line) + 1
    -- Past the cap with this line's end (its text alone, for the range's last line): the cut keeps the lines before.
    if used > MAX_CONTEXT_CHARS and (first + i - 1 < last or used - 1 > MAX_CONTEXT_CHARS) then
      return first + math.max(i - 2, 0)
    end
  end
  return last
end

---Lines `line1..line2` of `buf` as far as the daemon's cut can reach (every line takes at least its end).
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return string[]
local function reach(buf, line1, line2)
  return vim.api.nvim_buf_get_lines(buf, line1 - 1, math.min(line2, line1 + MAX_CONTEXT_CHARS), false)
end

---Context for lines `line1..line2` (1-based) of a buffer.
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return ollie.Context
function M.range(buf, line1, line2)
  local bname = vim.api.nvim_buf_get_name(buf)
  local name = bname == "" and ("untitled:" .. buf) or display(bname) -- (as the daemon names it once resumed)
  local ctx = {
    uri = bname == "" and name or vim.uri_from_bufnr(buf),
    range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } },
    languageId = vim.bo[buf].filetype == "ollie" and "markdown" or vim.bo[buf].filetype,
    label = M.label(name, line1, M.shown_last(reach(buf, line1, line2), line1, line2)),
  }
  if vim.bo[buf].buftype ~= "" or bname == "" then
    -- No file the daemon has or can read (lines of the chat's own answer, a scratch buffer): the lines go along.
    -- Before, the model got the block's header alone.
    ctx.selection = table.concat(vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false), "\n")
  end
  return ctx
end

---Context for a whole buffer.
---@param buf integer
---@return ollie.Context
function M.buffer(buf)
  local ctx = M.range(buf, 1, math.max(1, vim.api.nvim_buf_line_count(buf)))
  ctx.mention = display(vim.api.nvim_buf_get_name(buf))
  if table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") == "" then
    ctx.label = ctx.mention -- an empty file: its block has no lines either
  end
  return ctx
end

-- Files sent as images rather than text (the daemon checks what they really are).
local IMAGE_SUFFIXES = { png = true, jpg = true, jpeg = true, gif = true, webp = true }

---Whether a path names an image by its suffix.
---@param path string
---@return boolean
function M.is_image(path)
  return IMAGE_SUFFIXES[(path:match("%.(%w+)$") or ""):lower()] == true
end

-- The daemon's own cap on a file it reads (OLLIE_MAX_FILE_BYTES' default).
local MAX_FILE_BYTES = 16 * 1024 * 1024

---Why Neovim must not read the file the user named `path`, at `real` once links are followed (nil: it may): a
---file named inside the working directory, or the project root above it (Neovim started in a subdirectory:
---`../docs/notes.md`), must stay there (`notes.md` -> ~/.aws/credentials, whose text would go to the model); one
---named outside both is the user's own choice.
---@param path string
---@param real string|nil
---@return string|nil
function M.leads_out(path, real)
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  local named = vim.fs.normalize(path)
  named = vim.startswith(named, "/") and named or vim.fs.normalize(cwd .. "/" .. named)
  for _, dir in ipairs({ cwd, vim.fs.normalize(client.root_dir()) }) do
    local real_dir = vim.uv.fs_realpath(dir)
    if vim.startswith(named, dir .. "/") and not (real and real_dir and vim.startswith(real, real_dir .. "/")) then
      return "a link leading out of " .. dir
    end
  end
  return nil
end

---The bytes of the file the user named; nil and why when Neovim must not read them. The workspace may be a cloned
---repository, or what a step made: a FIFO (a read waits on it for good), a link to /dev/zero, a link leading out of
---the working directory. Looked at and read in one open of the file the links lead to: a check, then a read by name,
---read a FIFO or a link to a secret that a step swapped in between.
---@param path string as the user named it
---@param full string its absolute path
---@return string|nil data, string|nil err
function M.read(path, full)
  local real = vim.uv.fs_realpath(full)
  local stat = real and vim.uv.fs_stat(real)
  local why = (not stat or stat.type ~= "file") and "not a regular file" or M.leads_out(path, real)
  local data = not why and ondisk.read_plain(real, MAX_FILE_BYTES)
  if not data then
    return nil, why or "not a regular file"
  end
  if #data > MAX_FILE_BYTES then
    return nil, "larger than " .. MAX_FILE_BYTES .. " bytes"
  end
  return data
end

---The lines of the file the user named as Neovim reads them (a last line's end adds no line, a CR before an end
---goes), and its bytes; nil and why when Neovim must not read it (`read`: checked and read in one open).
---@param path string as the user named it
---@param full string its absolute path
---@return string[]|nil lines, string|nil data_or_err
function M.read_lines(path, full)
  local data, err = M.read(path, full)
  if not data then
    return nil, err
  end
  return data == "" and {} or vim.split((data:gsub("\r?\n$", "")), "\r?\n"), data
end

---An image file's context: beneath the working directory the daemon reads it (through its guarded path); one the
---user named outside it (a screenshot in ~/Pictures), which the daemon never reads, goes as its bytes.
---@param path string as the user named it
---@param full string its absolute path
---@return ollie.Context|nil ctx, string|nil err
local function image(path, full)
  if vim.fn.filereadable(full) ~= 1 then
    return nil, "#file:" .. path .. ": no such file"
  end
  local ctx = { image = full, label = display(full) .. " (image)", mention = display(full) }
  if vim.startswith(vim.fs.normalize(full), vim.fs.normalize(vim.fn.getcwd()) .. "/") then
    return ctx
  end
  local data, err = M.read(path, full)
  if not data then
    return nil, "#file:" .. path .. ": " .. err
  end
  ctx.data = vim.base64.encode(data)
  return ctx
end

---Context for a file by path: its buffer when loaded (unsaved text), else its text on disk; an image file goes as
---an image.
---@param path string
---@return ollie.Context|nil ctx, string|nil err
function M.file(path)
  local full = vim.fn.fnamemodify(path, ":p")
  if M.is_image(full) then
    return image(path, full)
  end
  local buf = vim.fn.bufnr(full)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return M.buffer(buf)
  end
  if vim.fn.filereadable(full) ~= 1 then
    return nil, "#file:" .. path .. ": no such file"
  end
  local lines, err = M.read_lines(path, full)
  if not lines then
    return nil, "#file:" .. path .. ": " .. err
  end
  -- A NUL as readfile has it, a NL: a string holding a NUL is a Blob to Vim's functions, which refuse it (E976).
  for i, line in ipairs(lines) do
    lines[i] = (line:gsub("%z", "\n"))
  end
  return {
    uri = vim.uri_from_fname(full),
    range = { start = { line = 0, character = 0 }, ["end"] = { line = #lines, character = 0 } },
    languageId = vim.filetype.match({ filename = full }) or "",
    label = M.label(display(full), #lines > 0 and 1 or nil, M.shown_last(lines, 1, #lines)),
    mention = display(full),
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
    return ctx.mention or ctx.label
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
    if name == "mcp" and colon == ":" then
      local server, uri = rest:match("^([^:]+):(%S+)$")
      if not server then
        err = err or (tag .. ": expected #mcp:<server>:<uri>")
        return tag
      end
      return add(M.resource(server, uri))
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

---The daemon's `context` param for contexts: one object per context, in order (nil for none). The range only:
---the daemon reads the lines from its copy of the document (unsaved edits included) and writes each block itself,
---so a resumed session's block still says which lines they were.
---@param contexts ollie.Context[]|nil
---@return table[]|nil
function M.wire(contexts)
  if not contexts or #contexts == 0 then
    return nil
  end
  local texts = vim.tbl_filter(function(c) return not c.image end, contexts)
  if #texts == 0 then
    return nil
  end
  return vim.tbl_map(function(c)
    return { uri = c.uri, range = c.range, languageId = c.languageId, selection = c.selection, mcpServer = c.mcpServer }
  end, texts)
end

---The daemon's `images` param for contexts: one `{path}` (or, read here, `{data, name}`) per image, in order (nil
---for none).
---@param contexts ollie.Context[]|nil
---@return table[]|nil
function M.images(contexts)
  local paths = vim.tbl_filter(function(c) return c.image ~= nil end, contexts or {})
  if #paths == 0 then
    return nil
  end
  return vim.tbl_map(function(c)
    return c.data and { data = c.data, name = vim.fn.fnamemodify(c.image, ":t") } or { path = c.image }
  end, paths)
end

---Attach the buffers of contexts to the daemon: it reads their unsaved text for the blocks.
---@param contexts ollie.Context[]
function M.attach(contexts)
  for _, c in ipairs(contexts) do
    if not c.selection and not c.image and not c.mcpServer then -- (its text goes along, an image as an image, a
      -- resource is the daemon's to read; an `untitled:` uri must not make a buffer)
      client.attach(vim.uri_to_bufnr(c.uri))
    end
  end
end

---The compact labels of contexts, in order.
---@param contexts ollie.Context[]|nil
---@return string[]
function M.labels(contexts)
  return vim.tbl_map(function(c) return c.label end, contexts or {})
end

local UNDO_NOTE = "\n\nthe user undid these changes of yours (turn "

---The compact label of one `<editor-context>` block's body (between its tags).
---@param body string
---@return string
local function block_label(body)
  -- The header lines only (as the daemon's own parser, ollie_lsp/editor.py): the code may say anything.
  local head = "\n" .. (body:match("^(.-)```") or body)
  local uri, server = head:match("\nMCP resource: (%S+) %(server ([^\n)]+)%)")
  if uri then
    return server .. ": " .. uri
  end
  -- The engine's `File: <path> (<language>)` (core/ollie/agent/editorcontext.py `_FILE`): no parens in the language,
  -- so a line full of ` (` is read once, not from each one to its end.
  local file = head:match("\nFile: ([^\n]+)")
  local path = file and (file:match("^(.+) %([^()]*%)$") or file) or "?"
  local a, b = head:match("\n[%a:]+ lines (%d+)%-(%d+)")
  local one = head:match("\n[%a:]+ line (%d+)")
  if a then
    return M.label(path, tonumber(a), tonumber(b))
  elseif one then
    return M.label(path, tonumber(one), tonumber(one))
  elseif head:find("\nSelected text:", 1, true) then
    return path .. " (selection)"
  end
  return path
end

-- How the daemon adds injected text to a tool result (core/ollie/agent/toolround.py).
local INJECTED = "\n[user, while this tool ran]\n"

local CLOSE = "</editor-context>"

---Where the last `</editor-context>` of text ends (0 for none).
---@param text string
---@return integer
local function last_close(text)
  local at = text:reverse():find(CLOSE:reverse(), 1, true)
  return at and #text - at + 1 or 0
end

---A tool result with the `<editor-context>` blocks of the text injected into it as their `📎` lines (what the
---tool itself printed is left as it is: a file may well contain such a block).
---@param text string
---@return string
function M.compact_blocks(text)
  local at = text:find(INJECTED, 1, true)
  if not at then
    return text
  end
  -- Blocks only before the last close: an open after it is closed by none, and each would be scanned to the end.
  local cut = last_close(text)
  if cut < at then
    return text
  end
  local blocks = text:sub(at, cut):gsub("<editor%-context>\n?(.-)</editor%-context>", function(body)
    return M.ICON .. " " .. block_label(body)
  end)
  return text:sub(1, at - 1) .. blocks .. text:sub(cut + 1)
end

---A saved prompt split into the compact labels of its `<editor-context>` blocks and the user's text. A block is one
---at the start (after other blocks) or at a line's start, a few spaces in: injects the daemon joined have each one's
---blocks before its own line (as the engine reads them, core/ollie/agent/editorcontext.py `_BLOCK`).
---@param content string
---@return string[] labels, string text
function M.split_prompt(content)
  local labels, kept = {}, {}
  -- Blocks only before the last close: an open after it is closed by none, and each would be scanned to the end.
  local cut = last_close(content)
  -- Positions, never the rest's copy after each block (quadratic in the blocks' number): `at` where the text not yet
  -- kept starts, `from` where the text after the last block looked at starts.
  local at, from = 1, 1
  while true do
    local open, body = content:find("<editor%-context>\n?", from)
    local stop, close = content:find(CLOSE, open or #content + 1, true)
    if not (open and close and close <= cut) then
      break
    end
    local gap = content:sub(from, open - 1)
    local indent = gap:match("\n([ \t]*)$")
    if (at == from and gap:match("^%s*$")) or (indent and #indent <= 16) then
      table.insert(labels, block_label(content:sub(body + 1, stop - 1)))
      local words = content:sub(at, open - 1):match("^(.*%S)")
      table.insert(kept, words and (words .. "\n") or "")
      at = close + 1 + #content:match("^\n*", close + 1)
      from = at
    else
      from = close + 1
    end
  end
  local rest = table.concat(kept) .. content:sub(at)
  -- The daemon tells the model with the next prompt what the user undid of its changes (core/ollie/agent/review.py):
  -- not what the user typed, which the live chat showed alone.
  local note = rest:find(UNDO_NOTE, 1, true)
  if note then
    rest = rest:sub(1, note - 1)
  end
  return labels, vim.trim(rest)
end

return M
