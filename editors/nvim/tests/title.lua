-- The session's title on the transcript's statusline: the first prompt's words while its turn still streams (the
-- daemon names the session then), a rename (`/rn`, :OllieRename) at once, a long one cut to fit, none for a new
-- session, and the renamed one's again when it is shown.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results
vim.o.columns = 200 -- the chat takes half: room for the status and a title

local bar = H.statusline

---Wait until the statusline shows `text` (plain).
local function wait_bar(text, what)
  H.wait(function() return bar():find(text, 1, true) ~= nil end, what)
end

vim.cmd("Ollie Write a haiku about the sea")
H.wait_chat("The sea rolls in")
local c = H.current()
wait_bar("Write a haiku about the sea", "the first prompt's title during its turn")
R.mid_turn = { bar = bar(), running = c.running, ended = H.chat.text():find("(end)", 1, true) ~= nil }
H.release("haiku")
H.wait_chat("_%(end%)_")

H.type_and_press("/rn Sea haiku")
wait_bar("Sea haiku", "the title after /rn")
R.renamed = bar()
local renamed = c.session

local long = "A title long enough to go past the width of the chat's window, however wide the terminal is made, "
  .. "and then some more words"
vim.cmd("OllieRename " .. long)
wait_bar("…", "the long title cut to fit")
local tw = c:windows()
R.long = { bar = bar(), width = vim.api.nvim_win_get_width(tw --[[@as integer]]),
  shown = vim.fn.strdisplaywidth(bar()) }

vim.cmd("OllieNew")
H.wait(function() return c.session ~= renamed and not bar():find("A title", 1, true) end, "the new session's bar")
R.new_session = bar()

H.ollie.load_session(renamed)
wait_bar("A title long enough", "the renamed session's title once it is shown again")
R.back = bar()
H.finish()
