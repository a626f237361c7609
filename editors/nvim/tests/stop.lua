-- :OllieStop interrupts a slow turn quickly.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd("Ollie tell me a long story")
H.wait_chat("Once")
local t0 = vim.uv.hrtime()
vim.cmd("OllieStop")
H.wait_chat("_%(interrupted%)_", 10000)
H.results.stop_ms = (vim.uv.hrtime() - t0) / 1e6
H.finish()
