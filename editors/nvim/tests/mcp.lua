-- :OllieMcp lists what ollie/mcp/list answers: each server with its state; a picked one's tools are told.
-- `#mcp:` completes the servers' resources in the input area; a picked one is read by the daemon into the prompt.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item, items)
  if labels[1]:find(" starting") then -- a session's start no longer waits for it: listed again until it is ready
    return vim.defer_fn(function() vim.cmd("OllieMcp") end, 50)
  end
  R.mcp_labels = labels
  on_choice(items[1])
end
vim.cmd("OllieMcp")
H.wait(function() return R.mcp_labels ~= nil end, "the MCP servers picker", 60000)
-- 60 s bounds a hang: a loaded machine starts the server slowly.
H.wait_notified("mcp__t__add", "the picked server's tools", 60000)

-- Typing `#mcp:` in the input area offers each resource (the list comes from the daemon, asked as `#` is typed).
local input = require("ollie.input")
input.items("#")
H.wait(function() return #input.items("#mcp:") > 0 end, "#mcp: completions", 60000)
R.completions = vim.tbl_map(function(i) return i.word end, input.items("#mcp:t:"))
vim.cmd("OllieChat")
H.type_and_press("what does #mcp:t:note://readme say?")
H.wait_chat("the readme says", 60000)
R.transcript = H.chat.text()
H.finish()
