-- Every stock key that opens the name under the cursor, on addresses the model's answer wrote, in the transcript:
-- gf, gF, <C-w>f and its kin hand one to netrw (a plugin every Neovim loads, as here), which fetched it with wget,
-- curl or scp as the user, outside the sandbox and its proxy; gx hands any scheme, and any name (the changes list's
-- too), to the system's opener.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
vim.cmd.runtime("plugin/netrwPlugin.vim") -- skipped under -u NONE; a user's Neovim has it

vim.cmd.edit("notes.txt")
H.ollie.ask("where are the docs?")
H.wait_chat("_%(end%)_")
local chat = H.current()
local win = vim.fn.win_findbuf(chat.transcript.buf)[1]
-- The answer's line holding each address (by its first word), the key pressed on the address.
local keys = {
  { "Docs:", "gf" }, { "Copy:", "gF" }, { "Split:", "<C-w>f" }, { "Tab:", "<C-w>gf" }, { "Seen:", "vEgf" },
  { "Guide:", "gx" }, { "Local:", "gx" }, { "Web:", "gx" },
}
for _, pressed in ipairs(keys) do
  local marker, key = unpack(pressed)
  vim.cmd.tabfirst()
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_buf(win, chat.transcript.buf) -- (a gf that opened the address showed it here)
  local lines = vim.api.nvim_buf_get_lines(chat.transcript.buf, 0, -1, false)
  local row = H.expect(vim.iter(ipairs(lines)):find(function(_, l) return l:find(marker, 1, true) end),
    "the answer's line with " .. marker)
  vim.api.nvim_win_set_cursor(win, { row, lines[row]:find(marker, 1, true) + #marker })
  vim.api.nvim_feedkeys(vim.keycode(key), "mx", false)
end
-- The changes list: a name a step wrote (a page with a script), which Neovim's gx handed to the system's opener.
vim.cmd("OllieChanges")
H.wait(function() return vim.bo.filetype == "ollie-changes" end, "the changes list")
local listed = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local at = H.expect(vim.iter(ipairs(listed)):find(function(_, l) return l:find("page.html", 1, true) end), "page.html")
vim.api.nvim_win_set_cursor(0, { at, (listed[at]:find("page.html", 1, true)) })
vim.api.nvim_feedkeys("gx", "mx", false)
-- A question's float: its code holds an address, and names a file outside the workspace (the link the step makes);
-- Neovim's own keys there fetched the one and opened the other, as did its <C-w>f on the link in the changes list.
vim.cmd("OllieApproval ask")
H.wait_notified("approval: ask", "the approval mode")
vim.ui.select = function(items, _, on_choice)
  local float = vim.iter(vim.api.nvim_list_wins()):find(function(w)
    return vim.api.nvim_win_get_config(w).relative ~= ""
  end)
  for _, pressed in ipairs({ { "http:", "<C-w>f" }, { "/etc/hostname", "gf" } }) do
    vim.api.nvim_set_current_win(H.expect(float, "the question's float"))
    H.expect(vim.fn.search("\\V" .. pressed[1], "w") > 0, pressed[1] .. " in the float")
    vim.api.nvim_feedkeys(vim.keycode(pressed[2]), "mx", false)
  end
  on_choice(vim.iter(items):find(function(item) return item.id == "allow_once" end))
end
H.ollie.ask("link it")
H.wait_chat("linked")
vim.cmd("OllieChanges")
H.wait(function() return vim.bo.filetype == "ollie-changes" and vim.fn.search("host.md", "w") > 0 end,
  "the link listed")
vim.api.nvim_feedkeys(vim.keycode("<C-w>f"), "mx", false)
H.results.buffers = vim.tbl_map(function(b) return vim.api.nvim_buf_get_name(b) end, vim.api.nvim_list_bufs())
H.results.messages = vim.fn.execute("messages")
H.finish()
