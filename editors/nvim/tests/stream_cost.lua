-- The same answer streamed into a short chat, then into one with a long history: how many of its deltas reach the
-- markdown parser (each an edit that walks every tree the parser holds: one per paragraph of the whole chat), and
-- the chat highlighted as markdown once the answer is in, its parse the same as the parser's own from scratch.
vim.cmd("filetype plugin on")
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results
local T = require("ollie.render").Transcript

local edits = 0
local counted = setmetatable({}, { __mode = "k" })
local parsed, deltas = 0, 0
local stream = T.stream
T.stream = function(self, ...)
  local tree = assert(vim.treesitter.highlighter.active[self.buf], "the transcript is highlighted").tree
  if not counted[tree] then
    counted[tree] = true
    tree:register_cbs({ on_bytes = function() edits = edits + 1 end })
  end
  local before = edits
  stream(self, ...)
  parsed, deltas = parsed + edits - before, deltas + 1
end

---A turn: the answer streamed, then its end; how many of its deltas reached the parser.
---@param n integer the turn's number
local function turn(n)
  parsed, deltas = 0, 0
  vim.cmd("Ollie tell me about markdown")
  H.wait(function() return select(2, H.chat.text():gsub("_%(end%)_", "")) >= n end, "the answer's end " .. n)
  return { parsed = parsed, deltas = deltas }
end

R.short = turn(1)
local chat = H.current()
local buf = chat.transcript.buf
local history = {}
for i = 1, 300 do
  vim.list_extend(history, { "", "## You", "question " .. i, "", "## ollie", "", "An **answer** with `code` " .. i, "",
    "_(done)_" })
end
chat.transcript:add(history)
R.long = turn(2)

-- The last answer is highlighted as markdown, its parse the same as the parser's own from scratch.
local tree = vim.treesitter.highlighter.active[buf].tree
---Every node of a whole parse with where it lies, as text, in order.
local function shape()
  local out = {}
  local function walk(node, lang)
    table.insert(out, table.concat({ lang, node:type(), node:range(true) }, " "))
    for child in node:iter_children() do
      walk(child, lang)
    end
  end
  tree:parse(true)
  tree:for_each_tree(function(tstree, lt) walk(tstree:root(), lt:lang()) end)
  table.sort(out)
  return table.concat(out, "\n")
end
local told = shape()
tree:invalidate(true)
R.same_parse = told == shape()
local row = H.expect(H.row_of("The last paragraph has **bold** words."), "the answer's last paragraph")
R.bold_captures = vim.tbl_map(function(c) return c.capture end,
  vim.treesitter.get_captures_at_pos(buf, row, #"The last paragraph has **b"))
H.finish()
