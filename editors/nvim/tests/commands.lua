-- :OllieModel, :OllieAgent (picker), :OllieQueue and :OllieInject during a turn, :OllieCompact.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd("OllieModel other-model")
H.wait_chat("model: other%-model")
vim.ui.select = function(items, _, on_choice)
  H.results.agent_items = items
  on_choice("coding")
end
vim.cmd("OllieAgent")
H.wait_chat("agent: coding")
vim.cmd("Ollie start a slow one")
H.wait_chat("Slowly")
vim.cmd("OllieQueue and this after")
vim.cmd("OllieInject mind the tests")
H.wait_chat("queued answer", 30000)
H.wait_chat("_%(end%)_.*queued answer.*_%(end%)_", 30000)
vim.cmd("OllieCompact")
H.wait_chat("compact", 15000)
H.finish()
