-- The daily loop: a turn edits calc.py, open in a buffer (Neovim never saves by itself), then runs its tests. The
-- edit goes to the buffer and is written (ollie/saveDocuments), so the tests run the fixed code; notes.txt, open
-- with the user's unsaved line, is left unsaved.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd.edit("notes.txt")
local notes = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_lines(notes, -1, -1, false, { "the user's unsaved line" })
vim.cmd.edit("calc.py")
local calc = vim.api.nvim_get_current_buf()

vim.cmd("Ollie fix add and run the tests")
H.wait_chat("_%(end%)_", 60000)
R.calc_buffer = vim.api.nvim_buf_get_lines(calc, 0, -1, false)
R.calc_modified = vim.bo[calc].modified
R.calc_disk = vim.fn.readfile("calc.py")
R.notes_modified = vim.bo[notes].modified
R.notes_buffer = vim.api.nvim_buf_get_lines(notes, 0, -1, false)
-- The edit is one change in the buffer's undo history: `u` takes it back.
vim.api.nvim_buf_call(calc, function() vim.cmd("silent undo") end)
R.calc_after_undo = vim.api.nvim_buf_get_lines(calc, 0, -1, false)
-- Back to what the turn left, then :OllieRewind 1 (confirmed): its notice counts calc.py, the change the chat
-- showed, and says apart the __pycache__ the test run wrote (it said "2 files restored" under "1 file changed").
vim.api.nvim_buf_call(calc, function() vim.cmd("silent redo") end)
vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end
vim.cmd("OllieRewind 1")
R.rewound = H.wait_notified("rewound to before turn 1", "the rewind")
R.calc_after_rewind = vim.fn.readfile("calc.py")
H.finish()
