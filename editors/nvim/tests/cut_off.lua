-- A reply cut at the model's output token limit: the chat says so under it, in words.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd("Ollie write a long story")
H.wait_chat("_%(max_tokens")
H.results.transcript = H.chat.text()
H.finish()
