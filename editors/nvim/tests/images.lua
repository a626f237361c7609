-- Images: `:Ollie ... #file:shot.png` sends the picture with the prompt (labelled in the transcript); `:OllieImage`
-- picks one from the working directory into the input, sent with what the user types; a file that is not an
-- image is refused by the daemon and said in the chat. An image the model reads (file_read) is one line under its
-- step, live and resumed.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

vim.cmd("Ollie what is in #file:shot.png")
H.wait_chat("a red square")
H.wait_chat("_%(end%)_")
R.first_chat = H.chat.text()

-- The picker (vim.ui.select), answered as a user would: the second image.
local offered
vim.ui.select = function(items, opts, on_choice)
  offered = vim.tbl_map(opts.format_item, items)
  table.sort(offered)
  on_choice(vim.fs.joinpath(vim.fn.getcwd(), "pics/b.png"))
end
vim.cmd("OllieImage")
R.offered = offered
local chat = H.current()
R.input = vim.api.nvim_buf_get_lines(chat.input_buf, 0, -1, false)
H.type_and_press(R.input[1] .. "and this one?") -- typed after what the picker put there
H.wait_chat("a green one")
H.wait_chat("_%(end%)_.*_%(end%)_")

vim.cmd("Ollie read shot.png yourself")
H.wait_chat("it is red")
H.wait_chat("_%(end%)_.*_%(end%)_.*_%(end%)_")
R.read_chat = H.chat.text()

vim.cmd("Ollie look at #file:fake.png")
H.wait_chat("not a PNG, JPEG, GIF or WebP")
R.final_chat = H.chat.text()

-- The session resumed in a new chat (:OllieNew, then :OllieSessions): the prompts show what images they had.
local first = H.current().session
vim.cmd("OllieNew")
H.wait(function() return H.current().session ~= first end, "the new session")
H.wait(function() return not H.chat.text():find("a green one") end, "an empty chat")
H.pick_id(first)
vim.cmd("OllieSessions")
H.wait_chat("a green one")
R.resumed_chat = H.chat.text()
H.finish()
