-- :OllieModel, :OllieAgent (pickers), :OllieQueue and :OllieInject during a turn, :OllieCompact; then
-- setup(): empty options are sent as a JSON object, bad ones get one message naming them.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

-- The pickers list what ollie/listModels and ollie/listAgents answer, labelled from their fields.
local function capture(key, pick)
  vim.ui.select = function(items, opts, on_choice)
    R[key .. "_items"] = items
    R[key .. "_labels"] = vim.tbl_map(opts.format_item, items)
    R[key .. "_prompt"] = opts.prompt
    on_choice(pick)
  end
end
capture("model", nil)
vim.cmd("OllieModel")
H.wait(function() return R.model_items ~= nil end, "the model picker")
vim.cmd("OllieModel other-model")
H.wait_chat("model: other%-model")
capture("agent", "coding")
vim.cmd("OllieAgent")
H.wait_chat("^%s*› /agent coding.*agent: coding") -- the cleared session drawn anew
vim.cmd("Ollie start a slow one")
H.wait_chat("Slowly")
vim.cmd("OllieQueue and this after, see #file:notes.txt")
vim.cmd("OllieInject mind the tests")
H.wait(function() return #H.current().transcript.pending == 2 end, "the queued and injected prompts")
H.release("slow")
H.wait_chat("queued answer", 30000)
H.wait_chat("_%(end%)_.*queued answer.*_%(end%)_", 30000)
vim.cmd("OllieCompact")
H.wait_chat("compacted: %d+ messages", 15000) -- its answer (the command's own line says "/compact" at once)
R.input_after = vim.api.nvim_buf_get_lines(H.current().input_buf, 0, -1, false)

-- The daemon got a JSON object as initializationOptions (an empty Lua table would be `[]`).
local client = vim.lsp.get_client_by_id(require("ollie.client").client_id)
R.init_options = vim.json.encode(client and client.config.init_options)
local config = require("ollie.config")
config.set({})
R.empty_init_options = vim.json.encode(config.init_options())
R.notifications_before_setup = #R.notifications
require("ollie").setup({ chat = { width = "wide" }, keymaps = { send = { n = 1 } }, colour = "red" })
R.setup_messages = vim.list_slice(R.notifications, R.notifications_before_setup + 1)
R.width_after_bad = config.options.chat.width
R.send_key_after_bad = config.options.keymaps.send.n

R.first_tab_chat = H.chat.text()

-- #selection and #file:path: the last visual selection of the file window, a file by path.
vim.cmd.edit("code.py")
vim.api.nvim_buf_set_mark(0, "<", 2, 0, {})
vim.api.nvim_buf_set_mark(0, ">", 3, 0, {})
local context = require("ollie.context")
local text, contexts = context.parse("explain #selection, see #file:notes.txt", vim.api.nvim_get_current_buf())
R.parsed_text = text
R.parsed_labels = vim.tbl_map(function(c) return c.label end, contexts)
local _, _, perr = context.parse("see #file:nope.txt", nil)
R.parse_error = perr
-- A saved prompt the daemon added an undo note to reads back as what the user typed.
R.split_with_note = { context.split_prompt("fix it\n\nthe user undid these changes of yours (turn 1): a.txt lines 2-2 "
  .. "(@@ -2,1 +2,1 @@)") }
-- Blocks as the daemon writes them: a selection sent with a range names its lines (`Location:`), a cut one the lines
-- it kept; only the header counts, never the code in the fence.
R.blocks_prompt = table.concat({
  "<editor-context>\nFile: a.py (python)\nLocation: lines 10-12\nSelected text:\n```python\nx = 1\n```\n"
    .. "</editor-context>",
  "<editor-context>\nFile: b.py\nSelected text:\n```\nShowing lines 1-2:\n```\n</editor-context>",
  "<editor-context>\nFile: c d.py (python)\nShowing line 4:\n```python\ny = 2\n```\n</editor-context>",
  "<editor-context>\nFile: empty.txt\n</editor-context>",
  "<editor-context>\nFile: big.txt\nCut at 20,000 characters: lines 690-200000 are not shown.\nShowing lines 1-689:\n"
    .. "```\nrow 1\n```\n</editor-context>",
  "why these?",
}, "\n\n")
R.split_blocks = { context.split_prompt(R.blocks_prompt) }
-- Injects the daemon joined: each one's block before its own line, past the first line too.
R.joined_prompt = "<editor-context>\nFile: calc.py (python)\nShowing line 1:\n```python\nx = 41\n```\n</editor-context>"
  .. "\n\nuse x\n<editor-context>\nFile: notes.txt\n```\nmilk\n```\n</editor-context>\n\nand the note"
R.split_joined = { context.split_prompt(R.joined_prompt) }
-- #buffer of a file too big to send whole: its label names the lines the daemon's cut keeps.
local rows = {}
for n = 1, 200000 do
  rows[n] = string.format("row %06d of the big table", n)
end
local big = vim.api.nvim_create_buf(true, false)
vim.api.nvim_buf_set_name(big, "big.txt")
vim.api.nvim_buf_set_lines(big, 0, -1, false, rows)
R.big_label = context.buffer(big).label
vim.bo[big].fileformat = "dos"
R.big_dos_label = context.buffer(big).label
vim.api.nvim_buf_set_lines(big, 0, -1, false, { string.rep("é", 25000), "x" })
R.long_line_label = context.buffer(big).label
vim.api.nvim_buf_delete(big, { force = true })

-- Keymaps come from the options: a chat made after setup() uses the configured send key.
require("ollie").setup({ cmd = vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD")), keymaps = { send = { n = "S" } } })
vim.cmd("tabedit notes.txt")
vim.cmd("OllieChat")
H.type_and_press("/usage", "S")
H.wait_chat("requests")
-- Bug: a chat opened with :OllieChat took its own transcript window for the file window: #buffer sent the
-- transcript (`📎 ollie://chat/2`).
H.type_and_press("what is in #buffer", "S")
H.wait_chat("buffer answer")
H.finish()
