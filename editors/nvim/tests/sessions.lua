-- :OllieNew starts a fresh session; :OllieSessions switches back to the first one.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))

vim.cmd("Ollie first question")
H.wait_chat("first answer")
H.wait_chat("_%(end%)_")
H.results.first = H.ollie.status.session
vim.cmd("OllieNew")
vim.wait(10000, function() return H.ollie.status.session ~= H.results.first end, 20)
H.results.second = H.ollie.status.session
H.results.after_new = H.chat.text()
-- Pick the first session in the picker.
vim.ui.select = function(items, _opts, on_choice)
  H.results.picker_items = #items
  for _, item in ipairs(items) do
    if item.id == H.results.first then
      return on_choice(item)
    end
  end
  on_choice(nil)
end
vim.cmd("OllieSessions")
H.wait_chat("first answer")
H.results.switched = H.ollie.status.session
H.finish()
