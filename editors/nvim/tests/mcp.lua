-- :OllieMcp lists what ollie/mcp/list answers: each server with its state; a picked one's tools are told.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.ui.select = function(items, opts, on_choice)
  R.mcp_labels = vim.tbl_map(opts.format_item, items)
  on_choice(items[1])
end
vim.cmd("OllieMcp")
H.wait(function() return R.mcp_labels ~= nil end, "the MCP servers picker", 60000)
H.wait(function()
  for _, n in ipairs(R.notifications) do
    if n.msg:find("mcp__t__add", 1, true) then return true end
  end
  return false
end, "the picked server's tools", 15000)
H.finish()
