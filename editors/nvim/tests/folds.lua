-- Step outputs fold in a transcript window: also the ones that come after the user opened one (Neovim makes a new
-- expr fold open after an opened one).
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local render = require("ollie.render")

local t = render.new("ollie://folds-test")
vim.cmd("vsplit")
local win = vim.api.nvim_get_current_win()
vim.api.nvim_win_set_buf(win, t.buf)
render.setup_window(win)

---Whether the output that starts with `first` shows folded.
local function closed(first)
  local row = H.expect(vim.fn.index(vim.api.nvim_buf_get_lines(t.buf, 0, -1, false), "    │ " .. first), first)
  return vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(row + 1) ~= -1 end)
end

t:add({ "## You", "run the tests" })
t:output("first output\nits second line\nits third line", false)
t:output("second output\nits second line", false)
H.results.before = { closed("first output"), closed("second output") }
-- A folded output says how many lines it holds under the one it shows.
H.results.foldtext = vim.api.nvim_win_call(win, function()
  local lines = vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)
  return { vim.fn.foldtextresult(vim.fn.index(lines, "    │ first output") + 1),
    vim.fn.foldtextresult(vim.fn.index(lines, "    │ second output") + 1) }
end)
-- The user opens the second step's output (`za` on it).
vim.api.nvim_win_call(win, function()
  vim.api.nvim_win_set_cursor(win, { vim.fn.index(vim.api.nvim_buf_get_lines(t.buf, 0, -1, false),
    "    │ second output") + 1, 0 })
  vim.cmd("normal! zo")
end)
t:output("third output\nits second line", false)
H.results.after = { closed("first output"), closed("second output"), closed("third output") }
-- A first line wider than the window is cut: the hint, shorter, still shows on the fold's one screen line.
t:output(("long "):rep(60) .. "\nits second line", false)
H.results.long = vim.api.nvim_win_call(win, function()
  local text = vim.fn.foldtextresult(vim.fn.line("$") - 2)
  return { text = text, width = vim.fn.strdisplaywidth(text), room = vim.fn.getwininfo(win)[1].width }
end)
-- A failed step's long output: its last lines stay open (why it failed), the header and the lines above them folded.
t:output("[step 1 bash] exit 1\n" .. table.concat(vim.tbl_map(function(i) return "line " .. i end, vim.fn.range(1, 11)),
  "\n"), true)
H.results.failed = vim.api.nvim_win_call(win, function()
  local lines = vim.api.nvim_buf_get_lines(t.buf, 0, -1, false)
  local header = vim.fn.index(lines, "    │ [step 1 bash] exit 1") + 1
  local shown = {}
  for l = header, #lines do
    if vim.fn.foldclosed(l) == -1 then
      table.insert(shown, lines[l])
    end
  end
  return { fold = vim.fn.foldtextresult(header), shown = shown }
end)
H.finish()
