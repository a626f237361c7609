-- A new user opens the chat while the model server is down: the chat says so at once, naming the URL it asked,
-- before any prompt; a prompt sent then fails, said once more only as far as it adds to that.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd("OllieChat")
H.wait_chat("OllieRestart once it is fixed")
R.opened = H.chat.text()
vim.cmd("Ollie hello")
H.wait_chat("\nerror: ")
H.wait_chat("_%(error%)_") -- the turn's end, drawn after its error (read before it, the test saw either)
R.after_prompt = H.chat.text()
H.finish()
