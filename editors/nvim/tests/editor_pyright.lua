-- The editor tools against a real language server: pyright attached to a Python buffer with a type error.
-- The handlers answer in the contract's shapes; the model's editor_* calls get the editor's answers, and an
-- edit that breaks the types comes back with the new error.
local U = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "review_util.lua"))
local H = U.H
local tools = require("ollie.editor_tools")

local cwd = vim.fn.getcwd()
local typed = vim.fs.joinpath(cwd, "typed.py")
vim.cmd.edit("typed.py")
local buf = vim.api.nvim_get_current_buf()
local function ask(fn, params)
  local got
  fn(params, function(result, err) got = { result = result, err = err } end)
  U.wait(function() return got end, "an editor tool's answer")
  return got
end
-- Before any language server runs, nothing can change a file's diagnostics: every path is up to date.
H.results.no_servers = ask(tools.diagnostics, { paths = { typed, vim.fs.joinpath(cwd, "code.py") } })
local bin = vim.fs.dirname(vim.json.decode(os.getenv("OLLIE_TEST_SERVER_CMD"))[1])
vim.lsp.start({ name = "pyright", cmd = { vim.fs.joinpath(bin, "pyright-langserver"), "--stdio" }, root_dir = cwd })
U.wait(function() return #vim.diagnostic.get(buf) > 0 end, "pyright's diagnostics", 90000)
vim.cmd.edit("notes.txt")
vim.cmd("setlocal modified") -- an unsaved file, focused

H.results.diagnostics = ask(tools.diagnostics, { paths = { typed } })
-- upToDate: notes.txt has no language server (its diagnostics cannot change), a file with no buffer may get
-- pyright's, and typed.py's pyright has not been seen to analyze its content since the request (not listed).
local elsewhere = vim.fs.joinpath(cwd, "code.py")
H.results.up_to_date = ask(tools.diagnostics, { paths = { typed, vim.fs.joinpath(cwd, "notes.txt"), elsewhere } })
H.results.all_diagnostics = ask(tools.diagnostics, {})
H.results.definition = ask(tools.definition, { path = typed, line = 5, column = 15 })
H.results.references = ask(tools.references, { path = typed, line = 1, column = 5 })
H.results.symbols = ask(tools.symbols, { query = "double" })
H.results.open_files = ask(tools.open_files, {})
H.results.no_server = ask(tools.definition, { path = vim.fs.joinpath(cwd, "notes.txt"), line = 1, column = 1 })

-- A flood of warnings (a linter on a huge file): the answer is capped, errors first.
local flood_ns = vim.api.nvim_create_namespace("ollie-test-flood")
local notes_buf = vim.fn.bufnr("notes.txt")
local flood = {}
for i = 1, tools.MAX_DIAGNOSTICS + 100 do
  flood[i] = { lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, message = "flood " .. i }
end
vim.diagnostic.set(flood_ns, notes_buf, flood)
local capped = ask(tools.diagnostics, {})
H.results.capped = {
  count = #capped.result.diagnostics, max = tools.MAX_DIAGNOSTICS,
  first = capped.result.diagnostics[1].severity, last = capped.result.diagnostics[#capped.result.diagnostics].message,
}
vim.diagnostic.reset(flood_ns, notes_buf)

-- The file changes on disk (a script, a checkout): the answer reloads the buffer and waits for pyright, here for as
-- long as it takes (its moment, 1.5 s, is not enough for pyright on a loaded machine: the answer was empty).
tools.republish_ms, tools.quiet_ms = 120000, 120000
local lines = vim.fn.readfile(typed)
lines[5] = "result: bytes = double(3)"
vim.fn.writefile(lines, typed)
H.results.after_disk_change = ask(tools.diagnostics, { paths = { typed } })

-- What each turn answered (an error, or its stop and reply), for the assertion's message when one goes wrong.
H.results.turns = {}
for _, text in ipairs({ "what is wrong in typed.py?", "make double return a string" }) do
  local res, err = U.call("ollie/submit", { text = text })
  table.insert(H.results.turns, err or { stop = res and res.stop, reply = res and res.reply })
end
H.results.buffer_after_edit = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
H.finish()
