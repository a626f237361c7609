-- The transcript: a read-only buffer the plugin alone writes, its structure kept in extmarks
-- (reasoning and answer blocks, tool steps by id, step locations, folded output), never parsed back from text.
local context = require("ollie.context")
local LanguageTree = require("vim.treesitter.languagetree")

local M = {}

local ns = vim.api.nvim_create_namespace("ollie_transcript")
M.ns = ns
-- Queued and injected prompts wait under the last line as virtual lines: a streaming answer goes on above them.
local ns_pending = vim.api.nvim_create_namespace("ollie_pending")
-- An empty transcript's line saying how to start.
local ns_hint = vim.api.nvim_create_namespace("ollie_hint")

-- Highlight groups users can theme (`:hi OllieReasoning guifg=...`); each links to a stock group.
M.HIGHLIGHTS = {
  OllieUser = "Title",
  OllieAssistant = "Title",
  OllieHeader = "CursorLine", -- the band of the chat's own lines: headers, steps, notes (T:own)
  OllieReasoning = "Comment",
  OllieTool = "Function",
  OllieToolDone = "DiagnosticOk", -- a completed step's ✓: green, as VS Code's (Function is cyan in many schemes)
  OllieToolRunning = "DiagnosticWarn",
  OllieToolFailed = "DiagnosticError",
  OllieToolOutput = "Comment",
  OllieLocation = "Directory",
  OllieSeparator = "NonText",
  OllieContext = "Special",
  OllieQueued = "DiagnosticHint",
  OllieInjected = "DiagnosticHint",
  OllieCommand = "Statement",
  OllieError = "DiagnosticError",
  OllieTurnEnd = "NonText",
  OllieHint = "NonText",
  OllieChanges = "DiagnosticInfo",
}

---Define the highlight groups (as defaults: a colorscheme or the user's own `:hi` wins), each linked to its stock
---group, or like it but readable where that is not (colors.lua).
function M.highlights()
  require("ollie.colors").define(M.HIGHLIGHTS)
end

M.ICONS = { pending = "○", in_progress = "◐", completed = "✓", failed = "✗" }
M.SEPARATOR = "  ───"
M.PROMPT_HEADER = "## You"
M.REPLY_HEADER = "## ollie"

---@class ollie.Step
---@field mark integer extmark of the title line
---@field done_mark integer|nil extmark of a completed step's ✓
---@field title string
---@field status string
---@field depth integer
---@field loc_marks integer[] extmarks of its location lines, in order
---@field batch string[]|nil a batch call's: the ids of its steps, in order
---@field call string the id of its call (a batch's, for its steps): `ollie/changes`' `steps` are by call
---@field files string[]|nil the files it changed (its `tool.files`; a completed edit's locations)
---@field diffs table[]|nil its own diffs, as its live `tool` event had them
---@field turn integer|nil its turn, once the turn's changes line is drawn (a resumed step's diffs are asked by it)
---@field peers ollie.Step[] the steps of its turn, in order

---@class ollie.Transcript
---@field buf integer
---@field stream_role string|nil   the role whose text the last line is extending ("assistant", "reasoning")
---@field reasoning {mark: integer, row: integer}|nil the reasoning block being streamed
---@field steps table<string, ollie.Step>
---@field locations table<integer, {path: string, line: integer|nil}|{step: ollie.Step}> by extmark id (a step's title)
---@field turn_steps ollie.Step[] the steps since the last prompt
---@field folds table<integer, string> foldexpr answer by 1-based line (">1" opens a fold, "1" inside one)
---@field replied boolean the current turn has its "## ollie" header
---@field pending {kind: string, prompt: string, text: string, hl: string}[] queued and injected prompts not yet taken
---@field pending_mark integer|nil
---@field changes table<integer, {turn: integer, mark: integer}> "✎ N files changed" lines by mark
---@field typed table<integer, true> the 0-based rows of the user's prompts: plain text, not markdown
---@field plain table<integer, true> the 0-based rows of steps' titles and locations, and of notes: their `_` and `*`
---  are not markdown
---@field attempt integer|nil the row the model's text being streamed starts at (T:drop_attempt)
---@field held {tree: vim.treesitter.LanguageTree, row: integer, col: integer, byte: integer}|nil where the text
---  the markdown parser has not been told of yet starts (T:hold_parser)
---@field streaming boolean|nil T:stream is writing
local T = {}
T.__index = T

---@type table<integer, ollie.Transcript>
local by_buf = {}

---A scratch buffer of the chat (no file, kept when hidden, no swap file).
---@param name string
---@param filetype string
---@return integer buf
function M.scratch(name, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  return buf
end

---A new, empty transcript buffer.
---@param name string the buffer name
---@return ollie.Transcript
function M.new(name)
  local buf = M.scratch(name, "ollie")
  vim.bo[buf].modifiable = false
  vim.bo[buf].formatlistpat = [[^\s*\%([-*+]\s\|\d\+[.)]\s\|/\S\+\%(\s\S\+\)*\s\s\)\s*]]
  local self = setmetatable({ buf = buf, steps = {}, locations = {}, folds = {}, replied = false, pending = {},
    changes = {}, typed = {}, plain = {}, turn_steps = {} }, T)
  by_buf[buf] = self
  vim.api.nvim_create_autocmd("BufWipeout", { buffer = buf, callback = function() by_buf[buf] = nil end })
  self:show_hint()
  return self
end

-- The text of every runtime query file for `lang`'s `name` (its own and each plugin's), as treesitter joins them.
---@return string
local function query_text(lang, name)
  local texts = {}
  for _, file in ipairs(vim.treesitter.query.get_files(lang, name)) do
    table.insert(texts, table.concat(vim.fn.readfile(file), "\n"))
  end
  return table.concat(texts, "\n")
end

-- The transcript's inline markdown without the conceal of `[x]` as a shortcut link (a chat has none): the answer's
-- `items[0]` showed as `items0`, `list[str]` as `liststr`, "[Errno 111]" as "Errno 111". True links (`[text](url)`)
-- still show their text alone.
---@return string|nil
local function inline_query()
  local query = query_text("markdown_inline", "highlights")
  if query == "" then
    return nil
  end
  query = query:gsub('%(shortcut_link%s*%[%s*"%["%s*"%]"%s*%]%s*@[%w%.]+%s*%(#set! conceal ""%)%)', "")
  -- A step's title or location is no markdown's emphasis: `Read calc/__init__.py` showed as "Read calc/init.py",
  -- `init` bold. (Its title's code spans still hide their backticks.)
  query = query:gsub("%(emphasis%) @markup%.italic", "((emphasis) @markup.italic (#not-ollie-plain? @markup.italic))")
  query = query:gsub("%(strong_emphasis%) @markup%.strong",
    "((strong_emphasis) @markup.strong (#not-ollie-plain? @markup.strong))")
  local found
  query, found = query:gsub("%(emphasis_delimiter%)(%s*%]%s*@conceal)", "%1")
  if found > 0 then
    query = query .. '\n((emphasis_delimiter) @conceal (#not-ollie-plain? @conceal) (#set! conceal ""))\n'
  end
  return query
end

-- Predicates on whether a node starts on a row of a user's prompt (`#ollie-typed? @capture`), or of a step's title or
-- location (`#ollie-plain? @capture`). Neovim 0.10 hands a predicate a node per capture, 0.11 a list of them.
for _, field in ipairs({ "typed", "plain" }) do
  vim.treesitter.query.add_predicate("ollie-" .. field .. "?", function(match, _, source, predicate)
    local node = match[predicate[2]]
    node = type(node) == "table" and node[#node] or node
    local t = type(source) == "number" and by_buf[source] or nil -- (a string: the held text, parsed apart)
    return node ~= nil and t ~= nil and t[field][(node:start())] == true
  end, { force = true })
end

-- Markdown's injections, its inline markdown left out of the user's prompts: what the user typed shows as typed
-- (`__init__.py` showed as a bold "init.py", `a*b*c` as "abc").
---@return table<string, string>|nil
local function injections()
  local query, found = query_text("markdown", "injections"):gsub('%(#set! injection%.language "markdown_inline"%)',
    '(#not-ollie-typed? @injection.content) %0')
  return found > 0 and { markdown = query } or nil
end

-- Parsers whose edits a streamed reply holds back (T:hold_parser): their `_on_bytes` is wrapped.
---@type table<vim.treesitter.LanguageTree, true>
local holdable = setmetatable({}, { __mode = "k" })

---Highlight a transcript buffer as markdown with treesitter (an error where Neovim has no markdown parser).
---@param buf integer
function M.highlight(buf)
  buf = buf == 0 and vim.api.nvim_get_current_buf() or buf
  local parser = assert(vim.treesitter.get_parser(buf, "markdown", { error = false, injections = injections() }))
  -- A private method (no public way to defer a parser's edits): a Neovim without it streams as before, told of each.
  if not holdable[parser] and type(LanguageTree._on_bytes) == "function" then
    holdable[parser] = true
    parser._on_bytes = function(tree, ...)
      local t = by_buf[buf]
      if not (t and t.held) then
        return LanguageTree._on_bytes(tree, ...)
      end
    end
  end
  vim.treesitter.highlighter.new(parser, { queries = { markdown_inline = inline_query() } })
end

---The foldexpr of transcript windows: each step's output is one fold.
---@param lnum integer
---@return string
function M.foldexpr(lnum)
  local t = by_buf[vim.api.nvim_get_current_buf()]
  return t and t.folds[lnum] or "0"
end

---`text` cut to `width` display cells, `mark` (default "…") ending what was cut.
---@param text string
---@param width integer
---@param mark string|nil
---@return string
function M.fit(text, width, mark)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  mark = mark or "…"
  local room = width - vim.fn.strdisplaywidth(mark)
  text = vim.fn.strcharpart(text, 0, math.max(room, 0))
  while vim.fn.strdisplaywidth(text) > room and text ~= "" do
    text = vim.fn.strcharpart(text, 0, vim.fn.strchars(text) - 1)
  end
  return text .. mark
end

---`text` cut in its middle to `width` display cells, "…" where it was cut: a long path keeps its start and, in two
---thirds of the room, its end (the file's name).
---@param text string
---@param width integer
---@return string
function M.fit_middle(text, width)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local tail, at = "", vim.fn.strchars(text)
  while at > 0 do
    local char = vim.fn.strcharpart(text, at - 1, 1)
    if vim.fn.strdisplaywidth(char .. tail) > math.floor((width - 1) * 2 / 3) then
      break
    end
    tail, at = char .. tail, at - 1
  end
  return M.fit(text, width - 1 - vim.fn.strdisplaywidth(tail), "") .. "…" .. tail
end

---The foldtext of transcript windows: a step output's first line as it shows, then how many more lines the fold
---holds ("… +2 lines"); before, a folded output looked like one of a single line.
---@return [string, string][]
function M.foldtext()
  local buf, start = vim.api.nvim_get_current_buf(), vim.v.foldstart
  local line = vim.api.nvim_buf_get_lines(buf, start - 1, start, false)[1] or ""
  local group = "OllieToolOutput" -- the output's own (a failed step's): its lines' extmark starts on the first
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { start - 1, 0 }, { start - 1, 0 }, { details = true })) do
    group = m[4].hl_group or group
  end
  local more = vim.v.foldend - start
  -- A command that ended well says what it ended with (it exited 0: its ✓ says no more than that).
  -- Its header and last lines only: foldtext runs at every redraw, and an output may hold thousands of lines.
  local tail = vim.api.nvim_buf_get_lines(buf, math.max(start, vim.v.foldend - 40), vim.v.foldend, false)
  table.insert(tail, 1, line)
  local ended = group ~= "OllieToolFailed" and require("ollie.folds").outcome(tail)
  line = ended and (line .. " · " .. ended) or line
  -- A fold draws one screen line, never wrapped: where the line and the hint do not fit, the hint drops "lines",
  -- then the line is cut (the hint's "…" says that more follows).
  local info = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  local width = info.width - info.textoff
  local hint = string.format(" … +%d line%s", more, more == 1 and "" or "s")
  if vim.fn.strdisplaywidth(line .. hint) > width then
    hint = string.format(" … +%d", more)
  end
  local room = width - vim.fn.strdisplaywidth(hint)
  return { { M.fit(line, room, ""), group }, { hint, "OllieHint" } }
end

---Window options of a window showing a transcript.
---@param win integer
function M.setup_window(win)
  local wo = vim.wo[win][0] -- (as :setlocal: a window split from it, or another buffer shown in it, never takes them)
  -- A long step or connection line wraps under its own indent, not at the window's edge.
  wo.wrap, wo.linebreak, wo.breakindent = true, true, true
  -- A line of a list wraps under its text: a command's answer in columns (/help's `  /clear   start a new ...`) under
  -- its description (it went on under the command's column), a markdown item under its words ('formatlistpat').
  wo.breakindentopt = "list:-1"
  wo.smoothscroll = true -- the top line may show in part: the end of a paragraph taller than the window, say
  wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'ollie.render'.foldexpr(v:lnum)"
  wo.foldlevel = 0
  wo.foldenable = require("ollie.config").options.fold_tool_output
  wo.foldtext = "v:lua.require'ollie.render'.foldtext()"
  -- Markdown's own marks (`_`, `**`, backticks) hidden where treesitter knows them.
  wo.conceallevel, wo.concealcursor = 2, "nc"
  wo.fillchars = "fold: "
end

function T:valid()
  return vim.api.nvim_buf_is_valid(self.buf)
end

function T:count()
  return vim.api.nvim_buf_line_count(self.buf)
end

---Show the transcript's end in `win`: the cursor at the end of the last line, so a paragraph streamed as one line
---taller than the window shows its last words; a last line that fits at the window's foot, the screen lines above
---it filled, part of a line too ('smoothscroll'). Before, the cursor at the line's start kept its first words in
---view, and the turn's end line after it showed alone.
---@param win integer
function T:show_end(win)
  local last = self:count()
  vim.api.nvim_win_set_cursor(win, { last, #vim.api.nvim_buf_get_lines(self.buf, last - 1, last, false)[1] })
  local height, top = vim.api.nvim_win_get_height(win), last
  if vim.api.nvim_win_text_height(win, { start_row = last - 1 }).all < height then
    -- At the top, the row from which the rest fills the window: Neovim scrolls down to the cursor by screen lines.
    -- (`zb` leaves out the part line above; `:normal` keys would read as the user typing, to on_key watchers.)
    while top > 1 and vim.api.nvim_win_text_height(win, { start_row = top - 1 }).all < height do
      top = top - 1
    end
    vim.api.nvim_win_call(win, function() vim.fn.winrestview({ topline = top, skipcol = 0 }) end)
    vim.fn.line("w0", win) -- worked out now, as for the current window: another's redraw does without smoothscroll
  end
  self:reveal(win)
end

---Keep windows at the end as text arrives, except the focused one when the user moved up to read.
function T:follow(before)
  local current = vim.api.nvim_get_current_win()
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if win ~= current or vim.api.nvim_win_get_cursor(win)[1] >= before then
      self:show_end(win)
    end
  end
end

---The end of the buffer: its last row, that row's length and the byte after it.
---@return integer row, integer col, integer byte
function T:tail()
  local row = self:count() - 1
  local col = #self:line(row)
  return row, col, vim.api.nvim_buf_get_offset(self.buf, row) + col
end

---While a reply streams, its markdown parser is not told of each delta: an edit walks every tree the parser holds
---(one per paragraph of the whole chat), so a delta cost in proportion to the session's length. The rows above keep
---their highlights (a delta only appends, it moves none of them); the streamed text has its own (highlight_held).
function T:hold_parser()
  local hl = vim.treesitter.highlighter.active[self.buf]
  if not self.held and hl and holdable[hl.tree] then
    local row, col, byte = self:tail()
    self.held = { tree = hl.tree, row = row, col = col, byte = byte }
  end
end

-- The streamed text's own highlights while the parser is held (T:highlight_held).
local ns_held = vim.api.nvim_create_namespace("ollie_held_markdown")

---The highlight queries of the held text's languages and its injections, as the chat's highlighter has them (built
---once: they are read from files).
---@type table<string, any>|nil
local held_queries

---Highlight the text streamed since hold_parser as markdown on its own, parsed apart: a delta costs the parse of
---that text's last block, not the chat's. Cleared once the chat's highlighter has it (release_parser).
function T:highlight_held()
  local held = self.held
  if not held then
    return
  end
  if not held_queries then
    local inline = inline_query()
    held_queries = { injections = injections(), markdown = vim.treesitter.query.get("markdown", "highlights"),
      markdown_inline = inline and vim.treesitter.query.parse("markdown_inline", inline)
        or vim.treesitter.query.get("markdown_inline", "highlights") }
  end
  local lines = vim.api.nvim_buf_get_lines(self.buf, held.row, -1, false)
  lines[1] = lines[1]:sub(held.col + 1)
  -- Only its last block (after a blank line out of a code fence) is parsed again: the blocks above it are done.
  local first, fenced = 1, false
  for i, line in ipairs(lines) do
    if line:match("^%s*```") or line:match("^%s*~~~") then
      fenced = not fenced
    elseif line == "" and not fenced and i < #lines then
      first = i + 1
    end
  end
  local row, col = held.row + first - 1, first == 1 and held.col or 0
  local text = table.concat(lines, "\n", first)
  local parser = vim.treesitter.get_string_parser(text, "markdown", { injections = held_queries.injections })
  parser:parse(true)
  vim.api.nvim_buf_clear_namespace(self.buf, ns_held, row, -1)
  parser:for_each_tree(function(tree, ltree)
    local query = held_queries[ltree:lang()]
    for id, node, meta in query and query:iter_captures(tree:root(), text) or function() end do
      local name, data = query.captures[id], meta[id] or {}
      if name:sub(1, 1) ~= "_" and name ~= "spell" and name ~= "nospell" then
        local sr, sc, er, ec = node:range()
        vim.api.nvim_buf_set_extmark(self.buf, ns_held, row + sr, sc + (sr == 0 and col or 0), {
          end_row = row + er, end_col = ec + (er == 0 and col or 0),
          hl_group = "@" .. name .. "." .. ltree:lang(),
          conceal = meta.conceal or data.conceal, conceal_lines = meta.conceal_lines or data.conceal_lines,
          priority = tonumber(meta.priority or data.priority) or 100,
        })
      end
    end
  end)
end

---Tell the parser at once of what was streamed since hold_parser: one edit, the text appended at the end.
function T:release_parser()
  local held = self.held
  if not held then
    return
  end
  self.held = nil
  vim.api.nvim_buf_clear_namespace(self.buf, ns_held, held.row, -1)
  local row, col, byte = self:tail()
  LanguageTree._on_bytes(held.tree, self.buf, vim.b[self.buf].changedtick, held.row, held.col, held.byte, 0, 0, 0,
    row - held.row, row == held.row and col - held.col or col, byte - held.byte)
end

---Write to the buffer, which stays read-only to the user. Any change but a stream's releases the parser first.
---@param fn fun()
function T:edit(fn)
  if not self.streaming then
    self:release_parser()
  end
  local before = self:count()
  vim.bo[self.buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[self.buf].modifiable = false
  if not ok then
    error(err)
  end
  self:show_pending()
  self:show_hint()
  self:follow(before)
end

---Run `fn`, which writes many lines, with the buffer's treesitter highlighter off: while it is on, each change costs
---time in proportion to the buffer's length, so a saved session of 800 messages took 25 s to draw, the editor frozen.
---@param fn fun()
function T:bulk(fn)
  local highlighted = vim.treesitter.highlighter.active[self.buf] ~= nil
  if highlighted then
    vim.treesitter.stop(self.buf)
  end
  local ok, err = pcall(fn)
  self:release_parser()
  if highlighted then
    M.highlight(self.buf)
    -- Parsed now where its windows show it: the highlighter parses a long chat a few milliseconds at a time, between
    -- redraws, and until it was done the chat showed its markdown raw (`_(end)_`, `**bold**`).
    local tree = vim.treesitter.highlighter.active[self.buf].tree
    for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
      tree:parse({ vim.fn.line("w0", win) - 1, vim.fn.line("w$", win) })
    end
  end
  if not ok then
    error(err, 0)
  end
end

---While the transcript is empty, dim lines on it say how to start ("Type a prompt, <C-s> to send", the configured
---send key; ":help ollie for the rest"); the first text takes their place. Before, an empty chat gave no hint at all.
function T:show_hint()
  vim.api.nvim_buf_clear_namespace(self.buf, ns_hint, 0, -1)
  if self:count() > 1 or self:line(0) ~= "" then
    return
  end
  local send = require("ollie.config").options.keymaps.send or {}
  local key = send.i or send.n
  local text = "Type a prompt" .. (key and (", " .. key .. " to send") or "")
  -- Two lines: in one, a chat 40 columns wide (an 80-column terminal) showed ":help oll".
  vim.api.nvim_buf_set_extmark(self.buf, ns_hint, 0, 0, { virt_text = { { text, "OllieHint" } },
    virt_text_pos = "overlay", virt_lines = { { { ":help ollie for the rest", "OllieHint" } } } })
end

---Keep the waiting prompts under the last line.
function T:show_pending()
  if #self.pending == 0 then
    if self.pending_mark then
      vim.api.nvim_buf_del_extmark(self.buf, ns_pending, self.pending_mark)
      self.pending_mark = nil
    end
    return
  end
  local virt = { { { "", "" } } }
  for _, p in ipairs(self.pending) do
    table.insert(virt, { { p.text, p.hl } })
  end
  self.pending_mark = vim.api.nvim_buf_set_extmark(self.buf, ns_pending, self:count() - 1, 0, {
    id = self.pending_mark, virt_lines = virt,
  })
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] == self:count() then
      self:reveal(win)
    end
  end
end

---Scroll a window at the end so the waiting prompts show: they are virtual lines under the last line, and
---Neovim scrolls to the cursor, not to them (a full window hid them).
---@param win integer
function T:reveal(win)
  if #self.pending == 0 then
    return
  end
  local height, top = vim.api.nvim_win_get_height(win), self:count()
  local rows = vim.api.nvim_win_text_height(win, { start_row = top - 1 }).all
  while rows <= height and top > 1 and vim.api.nvim_win_text_height(win, { start_row = top - 2 }).all <= height do
    top = top - 1
  end
  -- A last line taller than the window with them (a paragraph streamed as one line): the screen lines of it left out
  -- at the top ('smoothscroll'), the first from which the rest fits. Each count walks the whole line (a 128 KB one
  -- searched in ~20 took 33 ms an update): Neovim skips a row's width at a time, so the rows too many say where,
  -- checked; searched only for rows narrower than the window (a 'breakindent').
  local function fits(vcol)
    return vim.api.nvim_win_text_height(win, { start_row = top - 1, start_vcol = vcol }).all <= height
  end
  local skip = math.max(0, rows - height) * (vim.api.nvim_win_get_width(win) - vim.fn.getwininfo(win)[1].textoff)
  if skip > 0 and not (fits(skip) and not fits(skip - 1)) then
    local hi = vim.fn.virtcol({ top, "$" }, false, win)
    skip = 0
    while skip < hi do
      local mid = math.floor((skip + hi) / 2)
      if fits(mid) then
        hi = mid
      else
        skip = mid + 1
      end
    end
  end
  vim.api.nvim_win_call(win, function() vim.fn.winrestview({ topline = top, skipcol = skip }) end)
end

---A waiting prompt's line: its text, then one compact `📎` label per context it carries.
---@param prefix string
---@param text string
---@param labels string[]|nil
---@return string
local function pending_line(prefix, text, labels)
  local line = prefix .. text
  for _, l in ipairs(labels or {}) do
    line = line .. "  " .. context.ICON .. " " .. l
  end
  return line
end

---Show a prompt that waits: `kind` "queued" (for after the turn) or "injected" (into its next tool result).
---@param kind "queued"|"injected"
---@param text string
---@param labels string[]|nil the compact labels of its contexts
function T:pend(kind, text, labels)
  local queued = kind == "queued"
  table.insert(self.pending, {
    kind = kind, prompt = text, labels = labels, hl = queued and "OllieQueued" or "OllieInjected",
    text = pending_line(queued and "⏳ queued: " or "↳ injected: ", text, labels),
  })
  self:show_pending()
end

---Show the queued prompts as the daemon has them now (`held`: a stop holds them until they are sent on).
---@param prompts {text: string, labels: string[]}[]
---@param held boolean
function T:set_queued(prompts, held)
  local kept, shown = {}, {}
  for _, p in ipairs(self.pending) do
    if p.kind ~= "queued" then
      table.insert(kept, p)
    else -- the labels shown for a prompt queued here: its images' too, which the daemon's text does not carry
      shown[p.prompt] = p.labels
    end
  end
  for _, p in ipairs(prompts) do
    local labels = shown[p.text] or p.labels
    table.insert(kept, { kind = "queued", prompt = p.text, labels = labels, hl = "OllieQueued",
      text = pending_line(held and "⏸ held: " or "⏳ queued: ", p.text, labels) })
  end
  self.pending = kept
  self:show_pending()
end

---Take the waiting prompts of a kind (only the one with `prompt` as its text when given); returns them.
---@param kind string
---@param prompt string|nil
---@return {prompt: string, labels: string[]|nil}[] taken
function T:settle(kind, prompt)
  local kept, taken = {}, {}
  for _, p in ipairs(self.pending) do
    if p.kind == kind and (prompt == nil or (#taken == 0 and p.prompt == prompt)) then
      table.insert(taken, p)
    else
      table.insert(kept, p)
    end
  end
  self.pending = kept
  self:show_pending()
  return taken
end

---Append whole lines (ends any open stream), or insert them before row `at` (the stream goes on); `hl` colours
---them. Returns the 0-based row of the first.
---@param lines string[]
---@param hl string|nil
---@param at integer|nil
---@return integer row
function T:add(lines, hl, at)
  if not at then
    self.stream_role, self.reasoning, self.noted, self.cut = nil, nil, nil, nil
  end
  local row
  self:edit(function()
    row = at or self:count()
    -- A fresh buffer's one empty line is replaced, not kept as a blank first line.
    if not at and row == 1 and self:line(0) == "" then
      row = 0
      vim.api.nvim_buf_set_lines(self.buf, 0, -1, false, lines)
    else
      vim.api.nvim_buf_set_lines(self.buf, row, row, false, lines)
    end
  end)
  if hl and #lines > 0 then
    vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, {
      end_row = row + #lines - 1, end_col = #lines[#lines], hl_group = hl, hl_eol = true, priority = 200,
    })
  end
  return row
end

---Split text into lines (a string with newlines, or nil).
local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

---Extend the answer or the reasoning with a streamed delta; the two never share a block.
---@param role "assistant"|"reasoning"
---@param text string
function T:stream(role, text)
  if text == "" then
    return
  end
  local cut = self.cut
  if cut and role == "assistant" and self:count() == cut.row + cut.count then
    -- The answer goes on after a note that came between its words (a background save's error): the note moves
    -- above the line still streaming, which goes on whole (T:aside), rather than split the answer in two.
    self:edit(function()
      vim.api.nvim_buf_clear_namespace(self.buf, ns, cut.row, -1)
      vim.api.nvim_buf_set_lines(self.buf, cut.row, -1, false, {})
    end)
    self.stream_role, self.noted, self.cut = "assistant", nil, nil
    self:aside(cut.text, cut.hl)
  end
  self:hold_parser()
  self.streaming = true
  local ok, err = pcall(self.append_delta, self, role, text)
  self.streaming = false
  if not ok then
    error(err, 0)
  end
  self:highlight_held()
end

---T:stream's writes: the header and the blank line a new block needs, then the text.
---@param role "assistant"|"reasoning"
---@param text string
function T:append_delta(role, text)
  self:reply_header()
  self.attempt = self.stream_role and self.attempt or self:count()
  if self.stream_role ~= role then
    -- After reasoning (or an answer, or a note said mid-answer: a command's), a blank line keeps the two apart:
    -- markdown must not run on, and the answer's next words must not read as the note's.
    self:add((self.stream_role or self.noted) and { "", "" } or { "" })
    self.stream_role = role
    if role == "reasoning" then
      self.reasoning = { row = self:count() - 1 }
    end
  end
  local row, col = self:tail()
  self:edit(function() vim.api.nvim_buf_set_text(self.buf, row, col, row, col, split(text)) end)
  if self.reasoning then
    local last = self:count() - 1
    local last_text = self:line(last)
    self.reasoning.mark = vim.api.nvim_buf_set_extmark(self.buf, ns, self.reasoning.row, 0, {
      id = self.reasoning.mark, end_row = last, end_col = #last_text, hl_group = "OllieReasoning",
      hl_eol = true, priority = 200,
    })
  end
end

---The "## ollie" header, once per turn, before the first thing the model says or does.
function T:reply_header()
  if not self.replied then
    self.replied = true
    self:header(M.REPLY_HEADER, "OllieAssistant")
  end
end

---Give rows `from` to `to` (0-based; default `from` alone) that are not blank the band of the chat's own lines across
---the window (an extmark) that no text can wear: the model's answer may hold a line `## You` (a prompt the user never
---typed), `✓ Edit calc.py` (a step never run) or `_(end)_`.
---@param from integer
---@param to integer|nil
function T:own(from, to)
  for row = from, to or from do
    if self:line(row) ~= "" then
      vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, { line_hl_group = "OllieHeader" })
    end
  end
end

---A header of the chat's own (`## You`, `## ollie`), after a blank line, in the band of ollie's own lines.
---@param text string
---@param hl string
---@return integer row the blank line's
function T:header(text, hl)
  local row = self:add({ "", text }, hl)
  self:own(row + 1)
  return row
end

---A prompt: the header, the user's text and one compact line per context.
---@param text string
---@param labels string[]|nil
function T:prompt(text, labels)
  self.replied, self.last_end, self.turn_steps = false, nil, {}
  local row = self:header(M.PROMPT_HEADER, "OllieUser")
  local typed = split(text)
  local first = self:add(typed)
  for r = first, first + #typed - 1 do
    self.typed[r] = true
  end
  if labels and #labels > 0 then
    local lines = {}
    for _, l in ipairs(labels) do
      table.insert(lines, context.ICON .. " " .. l)
    end
    self:add(lines, "OllieContext")
  end
  return row
end

---Take the rows from `row` on off again (a prompt no daemon had, drawn just now).
---@param row integer
function T:cut_from(row)
  self:edit(function()
    vim.api.nvim_buf_clear_namespace(self.buf, ns, row, -1)
    vim.api.nvim_buf_set_lines(self.buf, row, -1, false, {})
  end)
  for r in pairs(self.typed) do
    self.typed[r] = r < row or nil
  end
  for r in pairs(self.plain) do
    self.plain[r] = r < row or nil
  end
end

---Take off the text the model streamed in an attempt that failed: the retry streams its answer anew (before, each
---attempt's words were run on, "StartingStarting an answer").
function T:drop_attempt()
  if self.stream_role and self.attempt then
    self:cut_from(self.attempt)
    self.stream_role, self.reasoning, self.cut = nil, nil, nil
  end
end

---A line of its own, coloured (queued and injected prompts, errors, notes); before row `at` if given (the stream
---goes on).
---@param text string
---@param hl string|nil
---@param at integer|nil
function T:note(text, hl, at)
  local lines = split(text)
  local mid_answer = not at and self.stream_role == "assistant" and self:line(self:count() - 1) ~= ""
  if self:line((at or self:count()) - 1) ~= "" then
    table.insert(lines, 1, "")
  end
  if at then
    table.insert(lines, "")
  end
  local row = self:add(lines, hl, at)
  for r = row, row + #lines - 1 do -- ollie's words, not markdown: "calc/__init__.py had ..." showed as "calc/init.py"
    self.plain[r] = true
  end
  if hl and hl ~= "OllieToolFailed" then -- (a command's output, a failed `!cmd`'s too: not ollie's words)
    self:own(row, row + #lines - 1)
  end
  self.noted = self.noted or not at
  if mid_answer then -- the turn may end here (its error) or its answer go on (T:stream moves the note then)
    self.cut = { row = row, count = #lines, text = text, hl = hl }
  end
end

---A note of the user's doing while a turn runs (a command's answer, an injected prompt): while the answer's last
---line still streams, above that line, which goes on whole (under it, the note split a word of the answer, its start
---above the note and its end below).
---@param text string
---@param hl string|nil
function T:aside(text, hl)
  local last = self:count() - 1
  self:note(text, hl, self.stream_role == "assistant" and self:line(last) ~= "" and last or nil)
end

---The text of 0-based row `row` ("" past either end).
---@param row integer
---@return string
function T:line(row)
  return row >= 0 and vim.api.nvim_buf_get_lines(self.buf, row, row + 1, false)[1] or ""
end

---The title line of a step: indent, status icon, title.
local function title_line(step, depth)
  return string.rep("  ", depth) .. (M.ICONS[step.status] or "•") .. " " .. step.title
end

local function status_hl(status)
  return status == "failed" and "OllieToolFailed" or (status == "completed" and "OllieTool" or "OllieToolRunning")
end

---The line of a step's location: `→ path:line`, indented under the step, the path's controls escaped (a newline in
---a file's name was an error that left the step undrawn; a U+202E reordered it).
local function location_line(loc, depth)
  local path = require("ollie.permission").shown_path(loc.path)
  return string.rep("  ", depth + 1) .. "→ " .. path .. (loc.line and (":" .. loc.line) or "")
end

---Add the title line (and location lines) of a step that starts.
---@param tool {id: string|nil, title: string, status: string, locations: table[]|nil, files: string[]|nil}
---@param depth integer
---@param call string|nil a batch's id, for one of its steps
function T:add_step(tool, depth, call)
  local edited = tool.kind == "edit" and tool.status == "completed"
    and vim.tbl_map(function(l) return l.path end, tool.locations or {}) or nil
  local step = { title = tool.title or "tool", status = tool.status or "pending", call = call or tool.id,
    files = type(tool.files) == "table" and tool.files or edited, peers = self.turn_steps }
  local row = self:add({ title_line(step, depth) })
  self.plain[row] = true
  step.depth = depth
  self:mark_step(step, row)
  self.locations[step.mark] = { step = step } -- <CR> on its title opens its own diff
  table.insert(self.turn_steps, step)
  if tool.id then
    self.steps[tool.id] = step
  end
  step.loc_marks = {}
  for _, loc in ipairs(tool.locations or {}) do
    local text = location_line(loc, depth)
    local lrow = self:add({ text })
    self.plain[lrow] = true
    -- One mark per location line: its colour, and the key `<CR>`/`gf` look it up by.
    local id = vim.api.nvim_buf_set_extmark(self.buf, ns, lrow, 0, {
      end_row = lrow, end_col = #text, hl_group = "OllieLocation", priority = 200,
    })
    self.locations[id] = { path = loc.path, line = loc.line }
    table.insert(step.loc_marks, id)
  end
end

---A step's locations as its `tool` event has them (the lines the step found, e.g. where an edit landed).
---@param id string
---@param locations table[]|nil
function T:set_locations(id, locations)
  local step = self.steps[id]
  if not (step and type(locations) == "table" and #locations == #step.loc_marks) then
    return
  end
  for i, loc in ipairs(locations) do
    local mark = step.loc_marks[i]
    local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, mark, {})
    local text = location_line(loc, step.depth)
    if pos[1] and vim.api.nvim_buf_get_lines(self.buf, pos[1], pos[1] + 1, false)[1] ~= text then
      self:edit(function() vim.api.nvim_buf_set_lines(self.buf, pos[1], pos[1] + 1, false, { text }) end)
      vim.api.nvim_buf_set_extmark(self.buf, ns, pos[1], 0, {
        id = mark, end_row = pos[1], end_col = #text, hl_group = "OllieLocation", priority = 200,
      })
      self.locations[mark] = { path = loc.path, line = loc.line }
    end
  end
end

---The 0-based row of a step's last line: its last location's, else its title's (what is added under it goes after).
---@param step ollie.Step
---@return integer|nil
function T:step_end(step)
  return vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, step.loc_marks[#step.loc_marks] or step.mark, {})[1]
end

---Rows kept by number, those from `from` on moved down `n` (lines were inserted there).
local function shifted(rows, from, n)
  local out = {}
  for row, v in pairs(rows) do
    out[row >= from and row + n or row] = v
  end
  return out
end

---Insert lines before 0-based row `at` above the end: the folds and prompts below it move down with their lines.
---@param lines string[]
---@param hl string|nil
---@param at integer
function T:insert(lines, hl, at)
  self.folds, self.typed, self.plain = shifted(self.folds, at + 1, #lines), shifted(self.typed, at, #lines),
    shifted(self.plain, at, #lines)
  self:add(lines, hl, at)
end

---Move a step to a new status: its icon and colour change in place.
---@param id string
---@param status string
function T:set_status(id, status)
  local step = self.steps[id]
  if not step or not status then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, step.mark, {})
  if not pos[1] then
    return
  end
  step.status = status
  self:edit(function()
    vim.api.nvim_buf_set_lines(self.buf, pos[1], pos[1] + 1, false, { title_line(step, step.depth) })
  end)
  self:mark_step(step, pos[1])
end

---Colour a step's title line (0-based `row`) by its status, in the band of ollie's own lines (T:own: its mark is set
---again as its line is, which drops others); a completed one's ✓ apart, in OllieToolDone.
---@param step ollie.Step
---@param row integer
function T:mark_step(step, row)
  step.mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0, {
    id = step.mark, end_row = row, end_col = #title_line(step, step.depth), hl_group = status_hl(step.status),
    priority = 200, line_hl_group = "OllieHeader",
  })
  if step.status == "completed" then
    local at = #string.rep("  ", step.depth)
    step.done_mark = vim.api.nvim_buf_set_extmark(self.buf, ns, row, at, {
      id = step.done_mark, end_row = row, end_col = at + #M.ICONS.completed, hl_group = "OllieToolDone", priority = 201,
    })
  end
end

---The text of a tool result (MCP-style JSON content, or plain text) and whether it is an error.
local function result_text(content)
  local ok, decoded = pcall(vim.json.decode, content or "")
  if ok and type(decoded) == "table" and type(decoded.content) == "table" then
    local texts = {}
    for _, c in ipairs(decoded.content) do
      table.insert(texts, c.text or "")
    end
    return table.concat(texts, "\n"), decoded.isError == true
  end
  return content or "", false
end

-- How the daemon words the result of a step the user rejected (core/ollie/agent/approval.py); a step to run outside
-- the sandbox has it as its section of the call's result (core/ollie/tools/execute/results.py), after its label.
local REJECTED = "^rejected: the user did not allow .-; it was not run%."
local ELEVATED = "^%[[^%]\n]- %(elevated%)%] error: "
local FEEDBACK = "\nThe user's feedback: (.*)$"

---The line a rejected step shows ("rejected: <the user's feedback>"); nil for any other result.
---@param text string a tool result
---@return string|nil
function M.rejection(text)
  text = text:gsub(ELEVATED, "", 1)
  if not text:find(REJECTED) then
    return nil
  end
  local feedback = text:match(FEEDBACK)
  return feedback and ("rejected: " .. vim.trim(feedback)) or "rejected"
end

---An image's size as the chat names it: `12 KB` (at least 1).
---@param bytes any the daemon's `bytes`
---@return string
function M.image_size(bytes)
  return ("%d KB"):format(math.max(1, math.floor((tonumber(bytes) or 0) / 1024 + 0.5)))
end

---A prompt's images as its labels name them, `image (png, 1 KB)` (the daemon's `{mime, bytes}`: no data).
---@param images any the `images` of a history `user` message or a `user` event
---@return string[]
function M.image_labels(images)
  local labels = {}
  for _, image in ipairs(type(images) == "table" and images or {}) do
    local kind = tostring(type(image) == "table" and image.mime or "image"):gsub("^image/", ""):gsub("%c", " ")
    table.insert(labels, ("image (%s, %s)"):format(kind, M.image_size(type(image) == "table" and image.bytes)))
  end
  return labels
end

---A byte count as the `[network]` lines of a result say it (core/ollie/tools/execute/results.py).
local function size(n)
  n = tonumber(n) or 0
  return n < 1024 and (n .. " B") or n < 1048576 and ("%.1f KB"):format(n / 1024) or ("%.1f MB"):format(n / 1048576)
end

---One connection of a step's `tool.network`: `⇄ host:port denied (you said no), sent 0 B, received 0 B`; the record
---adding up those past the first hundred: `⇄ ... 900 more connections (900 denied), sent 0 B, received 0 B`.
---@param c table {host, port, verdict, how, words, sent, received, error?, more?} (an old daemon's has no `words`)
---@return string
local function network_line(c)
  local how = (c.how or "") ~= "" and (" (" .. tostring(c.how) .. ")") or ""
  local what = type(c.more) == "number" and c.more > 0 and ("... %d more connections%s"):format(c.more, how)
    or ("%s:%s %s"):format(tostring(c.host), tostring(c.port),
      type(c.words) == "string" and c.words or (tostring(c.verdict) .. how))
  local line = ("    ⇄ %s, sent %s, received %s"):format(what, size(c.sent), size(c.received))
  line = c.error and (line .. "; " .. tostring(c.error)) or line
  return (line:gsub("%c", " ")) -- one buffer line whatever the daemon's strings hold
end

---The line of a step that changed more files than its `tool` event's `diffs` carry (the daemon sends its first 100
---and counts the rest in `diffsMore`): how many it changed in all, and where they are listed. Nil for any other step
---(the chat shows no step's diffs: a step of a few files names them in its `→` lines or its output).
---@param tool table|nil the step's `tool` object
---@return string|nil
function M.more_files_line(tool)
  local more = type(tool) == "table" and tool.diffsMore
  if type(more) ~= "number" or more < 1 or more % 1 ~= 0 or type(tool.diffs) ~= "table" then
    return nil
  end
  return ("    ✎ %d files changed — :OllieChanges"):format(#tool.diffs + more) -- (under the step: by it)
end

-- A failed step's output of at most this many lines is not folded: the error shows without opening it. A longer
-- one keeps its last lines open (where a traceback or a test run says why), the lines above them folded.
local FAILED_OPEN_LINES, FAILED_TAIL_LINES = 8, 6

---A step's connections (its `tool.network`), the images its tool returned (one line each: the model was shown them,
---the chat draws none) and the files it changed past those its event lists, then its output, folded (a failed step's
---short one open), then a separator so the answer that follows stands apart. What comes before the output stays out
---of the fold: it shows without opening it.
---@param content string
---@param failed boolean
---@param tool table|nil the step's `tool` object
---@param images table[]|nil the `images` of its `tool` event or history message: `{mime, bytes, data?}`
function T:output(content, failed, tool, images)
  local network = tool and tool.network
  local text, is_error = result_text(content)
  text = context.compact_blocks(text) -- an inject's context: its 📎 line, as a prompt shows it
  local collapsed = text:match("^%[%w+ result of [^%]]- collapsed: (%d+ lines)")
  local lines = {}
  local rejected = M.rejection(text)
  if rejected then
    -- The user said no (ollie/permission): one line, never folded, with what they told the model.
    for i, l in ipairs(split(rejected)) do
      table.insert(lines, (i == 1 and ("    " .. M.ICONS.failed .. " ") or "      ") .. l)
    end
  elseif collapsed then
    lines = { "    │ (output seen by the model, then collapsed: " .. collapsed .. ")" }
  else
    for _, l in ipairs(split(vim.trim(text))) do
      table.insert(lines, "    │ " .. l)
    end
  end
  -- A blank line first: the indented output is then a markdown code block, which markdown leaves as it is
  -- (in a paragraph, `[call 1 file_edit]` lost its brackets and underscores to the conceal).
  self:add({ "" })
  for _, c in ipairs(type(network) == "table" and network or {}) do
    self:add({ network_line(c) }, c.verdict == "allowed" and "OllieToolOutput" or "OllieToolFailed")
  end
  local call = tool and self.steps[tool.id]
  local batch = call and call.batch or {}
  for _, image in ipairs(type(images) == "table" and images or {}) do
    local line = ("[image: %s, %s]"):format(tostring(image.mime), M.image_size(image.bytes)):gsub("%c", " ")
    -- Under the step of the batch that read it; one naming none (an MCP tool's, a session saved before steps were
    -- kept) under the call, as before.
    local step = self.steps[batch[type(image.step) == "number" and image.step + 1 or 0] or ""]
    local row = step and self:step_end(step)
    if row then
      self:insert({ "      " .. line }, "OllieToolOutput", row + 1)
    else
      self:add({ "    " .. line }, "OllieToolOutput")
    end
  end
  local more = M.more_files_line(tool)
  if more then
    self:add({ more }, "OllieChanges")
  end
  -- The fold is known before the lines land, so the windows fold them as they appear.
  local first = self:count() + 1
  -- A failed step's short output stays open: its first line is only "[call 1 file_edit] exit 1", the why below it.
  local folded = #lines
  if failed or is_error then
    folded = #lines <= FAILED_OPEN_LINES and 0 or #lines - FAILED_TAIL_LINES
  end
  if folded > 1 then
    self.folds[first] = ">1"
    for l = first + 1, first + folded - 1 do
      self.folds[l] = "1"
    end
  end
  self:add(lines, (failed or is_error) and "OllieToolFailed" or "OllieToolOutput")
  if self.folds[first] then
    require("ollie.folds").close(self.buf, first)
  end
  self:add({ M.SEPARATOR }, "OllieSeparator")
  return is_error
end

---A tool call as steps: its title line, and for a batch each inner step under it.
---@param tool table the call's `tool` object
---@param steps table[]|nil a batch's `steps`
function T:add_call(tool, steps)
  self:reply_header()
  if steps and #steps > 0 then
    -- A batch: its locations are its steps', shown under each step.
    tool = vim.tbl_extend("force", tool, { locations = {} })
  end
  self:add_step(tool, 1)
  for _, s in ipairs(steps or {}) do
    self:add_step(s, 2, tool.id)
  end
  if tool.id and self.steps[tool.id] then
    -- Its steps in order: the image a step read goes under it (an image's `step` is its index in the batch).
    self.steps[tool.id].batch = vim.tbl_map(function(s) return s.id end, steps or {})
  end
end

---Render a `call`, `step` or `tool` event from its v2 `tool` object (and `steps` of a batch).
---@param ev {role: string, name: string|nil, content: string, tool: table|nil, steps: table[]|nil}
function T:tool_event(ev)
  local tool = ev.tool
  if ev.role == "call" then
    self:add_call(tool or { title = ev.name or "tool", status = "pending" }, ev.steps)
  elseif ev.role == "step" then
    if tool then
      self:set_status(tool.id, tool.status)
    end
  elseif ev.role == "tool" then
    if tool then
      for _, s in ipairs({ tool, unpack(ev.steps or {}) }) do
        self:set_status(s.id, s.status)
        self:set_locations(s.id, (s ~= tool or ev.steps == nil or #ev.steps == 0) and s.locations or nil)
        if self.steps[s.id] and type(s.diffs) == "table" then
          self.steps[s.id].diffs = s.diffs -- what it opens (a resumed one's, the history keeps none, are asked for)
        end
      end
    end
    self:output(ev.content, tool ~= nil and tool.status == "failed", tool, ev.images)
  end
end

-- Stop reasons a person needs spelled out; the others show as they are, `_(end)_`.
local STOP_LABELS = { max_tokens = "max_tokens: cut off, the reply reached the model's output token limit" }

local function end_text(stop)
  return string.format("_(%s)_", STOP_LABELS[stop] or stop)
end

---The end of a turn: its stop reason (and an error's message) as a line of its own.
---@param stop string
---@param says string|nil what the line says instead of the stop reason
function T:turn_end(stop, says)
  local from = self:count()
  self:note(says and string.format("_(%s)_", says) or end_text(stop), "OllieTurnEnd")
  for row = from, self:count() - 1 do -- a note, but its `_(…)_` is markdown's italic, not to show as typed
    self.plain[row] = nil
  end
  self.replied = false
  -- Where it is, so that a history drawn just now can be told the true stop reason (restate_end).
  self.last_end = { stop = stop, mark = vim.api.nvim_buf_set_extmark(self.buf, ns, self:count() - 1, 0, {}) }
end

---The last turn's end line made to say `stop`: a history keeps no stop reason but an interrupt, so it draws a
---reply's end as `end`, and nothing for a turn that ended before any reply (an error).
---@param stop string
function T:restate_end(stop)
  local last = self.last_end
  local row = last and vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, last.mark, {})[1]
  if not last or not row then
    return self:turn_end(stop)
  end
  if last.stop ~= stop then
    last.stop = stop
    local col = #vim.api.nvim_buf_get_lines(self.buf, row, row + 1, false)[1]
    self:edit(function() vim.api.nvim_buf_set_text(self.buf, row, 0, row, col, { end_text(stop) }) end)
  end
end

---A turn's changes line; `:OllieChanges` within 40 columns of its start, what is said of undos after it (before it,
---a chat 40 columns wide broke the line after the command's ":").
---@param c {files: integer, undone: boolean|nil}
local function changes_text(c)
  if c.undone and c.files == 0 then
    return "✎ all undone since — :OllieChanges"
  end
  return string.format("✎ %d file%s changed — :OllieChanges%s", c.files, c.files == 1 and "" or "s",
    c.undone and " (some undone since)" or "")
end

---The compact line of a turn that changed files, from the `turnChanges` of its end event or of its last message
---in the history (`{turn, files, undone}`: one source for both); nothing for a turn that changed none. Its key opens
---the turn's changes list. One whose diff failed (`unknown`, `reason`: why) says so, dim: it may have
---changed files that no review, undo or rewind reaches; said once for turns of the same reason (`again`: each turn's
---in the home directory).
---@param c {turn: integer, files: integer?, undone: boolean?, unknown: boolean?, reason: string?, again: boolean?}|nil
function T:turn_changes(c)
  if type(c) == "table" and c.unknown == true then
    if c.again ~= true then
      local why = type(c.reason) == "string" and " (" .. c.reason .. ")" or ""
      self:note("Changed files: not known" .. why, "OllieHint")
    end
    return
  end
  if type(c) ~= "table" or type(c.turn) ~= "number" or type(c.files) ~= "number" or c.files < 0
    or c.files == 0 and c.undone ~= true then
    return
  end
  self:note(changes_text(c), "OllieChanges")
  for _, step in ipairs(self.turn_steps) do
    step.turn = c.turn
  end
  local entry = { turn = c.turn }
  entry.mark = vim.api.nvim_buf_set_extmark(self.buf, ns, self:count() - 1, 0, {})
  self.changes[entry.mark] = entry
end

---Turn `turn`'s changes line once an undo left it `files`: as the history draws it when the session is resumed.
---@param turn integer
---@param files integer
function T:changes_undone(turn, files)
  local text = changes_text({ files = files, undone = true })
  for mark, entry in pairs(self.changes) do
    local row = entry.turn == turn and vim.api.nvim_buf_get_extmark_by_id(self.buf, ns, mark, {})[1]
    if row then
      self:edit(function() vim.api.nvim_buf_set_lines(self.buf, row, row + 1, false, { text }) end)
      vim.api.nvim_buf_set_extmark(self.buf, ns, row, 0,
        { end_row = row, end_col = #text, hl_group = "OllieChanges", hl_eol = true, priority = 200,
          line_hl_group = "OllieHeader" }) -- (its line set again dropped its band: T:own)
    end
  end
end

---What a transcript line points at: a step location `{path, line}`, a step's title `{step}` or a changes line
---`{turn}`; nil if nothing.
---@param row integer 0-based
---@return {path: string, line: integer|nil}|{step: ollie.Step}|{turn: integer|nil}|nil
function T:target_at(row)
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(self.buf, ns, { row, 0 }, { row, -1 }, {})) do
    local target = self.locations[m[1]] or self.changes[m[1]]
    if target then
      return target
    end
  end
  return nil
end

---Empty the transcript (a new or another session).
function T:clear()
  self:edit(function() vim.api.nvim_buf_set_lines(self.buf, 0, -1, false, {}) end)
  vim.api.nvim_buf_clear_namespace(self.buf, ns, 0, -1)
  self.steps, self.locations, self.folds, self.changes, self.typed, self.plain = {}, {}, {}, {}, {}, {}
  self.turn_steps = {}
  self.stream_role, self.reasoning, self.replied, self.last_end = nil, nil, false, nil
  self.pending = {}
  self:show_pending()
end

---The whole transcript as text.
---@return string
function T:text()
  return table.concat(vim.api.nvim_buf_get_lines(self.buf, 0, -1, false), "\n")
end

M.Transcript = T
return M
