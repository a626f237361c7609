-- :OllieModel, :OllieAgent (picker), :OllieQueue and :OllieInject during a turn, :OllieCompact.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

-- The pickers list what ollie/listModels and ollie/listAgents answer, labelled from their fields.
local function capture(key, pick)
  vim.ui.select = function(items, opts, on_choice)
    H.results[key .. "_items"] = items
    H.results[key .. "_labels"] = vim.tbl_map(opts.format_item, items)
    on_choice(pick)
  end
end
capture("model", nil)
vim.cmd("OllieModel")
vim.wait(10000, function()
  return H.results.model_items ~= nil
end, 20)
vim.cmd("OllieModel other-model")
H.wait_chat("model: other%-model")
capture("agent", "coding")
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
