-- ollie: an LLM coding agent in the editor. Commands are defined here; the
-- plugin itself loads on first use (require("ollie")).
if vim.g.loaded_ollie then
  return
end
vim.g.loaded_ollie = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("ollie.nvim needs Neovim >= 0.10", vim.log.levels.ERROR)
  return
end

---@type table<string, {fn: fun(args: table), opts: table}>
local commands = {
  Ollie = {
    fn = function(a)
      require("ollie").ask(a.args, a.range > 0 and { line1 = a.line1, line2 = a.line2 } or nil)
    end,
    opts = { nargs = "*", range = true, desc = "Ask ollie (with a range: about the selected lines)",
             complete = function(lead) return require("ollie.input").complete_cmdline(lead) end },
  },
  OllieChat = {
    fn = function(a) require("ollie").open_chat(a.args) end,
    opts = { nargs = "?", complete = function() return require("ollie.chat").names() end,
             desc = "Open this tab's chat, or the named chat (made when new) in this tab" },
  },
  OllieImage = {
    fn = function(a) require("ollie").image(a.args) end,
    opts = { nargs = "?", complete = "file", desc = "Attach an image to the prompt (a path, or picked)" },
  },
  OllieStop = { fn = function() require("ollie").stop() end, opts = { desc = "Interrupt the running turn" } },
  OllieInject = {
    fn = function(a) require("ollie").inject(a.args) end,
    opts = { nargs = "+", desc = "Inject text into the running turn" },
  },
  OllieQueue = {
    fn = function(a) require("ollie").queue(a.args) end,
    opts = { nargs = "+", desc = "Queue a prompt for after the running turn" },
  },
  OllieNew = { fn = function() require("ollie").new_session() end, opts = { desc = "Start a new ollie session" } },
  OllieSessions = {
    fn = function() require("ollie").pick_session() end,
    opts = { desc = "Switch to another ollie session" },
  },
  OllieModel = {
    fn = function(a) require("ollie").model(a.args) end,
    opts = { nargs = "?", complete = function(lead) return require("ollie.pickers").complete("model", lead) end,
             desc = "Show or switch the model" },
  },
  OllieAgent = {
    fn = function(a) require("ollie").agent(a.args) end,
    opts = { nargs = "?", complete = function(lead) return require("ollie.pickers").complete("agent", lead) end,
             desc = "Show or switch the agent" },
  },
  OllieCompact = { fn = function() require("ollie").compact() end, opts = { desc = "Compact the session's context" } },
  OllieRestart = {
    fn = function() require("ollie").restart() end,
    opts = { desc = "Restart the daemon (after configuring a model or a key); the chats come back" },
  },
}

-- Review, approval and session management (lua/ollie/{review,permission,pickers}.lua).
commands.OllieChanges = {
  fn = function(a) require("ollie.review").changes(tonumber(a.args)) end,
  opts = { nargs = "?", desc = "List the files a turn changed (default: the last); <CR> opens a diff" },
}
commands.OllieRewind = {
  fn = function(a) require("ollie.review").rewind(a.args) end,
  opts = { nargs = "?", complete = function() return { "undo" } end, desc = "Rewind files and chat to before a turn" },
}
commands.OllieFork = {
  fn = function(a) require("ollie").fork(a.args) end,
  opts = { nargs = "?", desc = "Fork the chat into a new session (up to the end of turn [n]) and switch to it" },
}
commands.OllieApproval = {
  fn = function(a) require("ollie.permission").set_approval(a.args) end,
  opts = { nargs = "?", complete = function(lead) return require("ollie.permission").complete(lead) end,
           desc = "Set the approval mode: ask, auto-edit, auto, read-only" },
}
commands.OllieRename = {
  fn = function(a) require("ollie.pickers").rename(a.args) end,
  opts = { nargs = "?", desc = "Rename a session (picked; with a title: the current one)" },
}
commands.OllieMcp = {
  fn = function() require("ollie.pickers").mcp() end,
  opts = { desc = "List the session's MCP servers, their state and tools" },
}
commands.OllieArchive = {
  fn = function() require("ollie.pickers").archive() end,
  opts = { desc = "Archive a session (picked)" },
}

for name, cmd in pairs(commands) do
  vim.api.nvim_create_user_command(name, cmd.fn, cmd.opts)
end

-- A session file saved with the chat open (lua/ollie/sessionfile.lua). Here, not in lua/ollie: a session given to
-- `nvim -S` loads before anything of ollie's is required.
local session_group = vim.api.nvim_create_augroup("ollie_session", { clear = true })
vim.api.nvim_create_autocmd("SessionWritePost", {
  group = session_group,
  callback = function() require("ollie.sessionfile").silence(vim.v.this_session) end,
})
local function drop_stand_ins()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.startswith(vim.api.nvim_buf_get_name(buf), "ollie://") then
      return require("ollie.sessionfile").drop_stand_ins()
    end
  end
end
vim.api.nvim_create_autocmd("SessionLoadPost", {
  group = session_group,
  callback = function()
    if package.loaded["ollie.chat"] then
      return require("ollie.sessionfile").loaded() -- a chat runs: the session may show it again
    end
    drop_stand_ins()
  end,
})
-- A plugin manager loading ollie on first use loads it after the session: its stand-ins go now.
drop_stand_ins()

-- A code action's long answer opens as answer-N.txt (window/showDocument): the model's text, whose `vim: set ...:`
-- line would set options, global ones too ('autowriteall'), with 'modeline' on (a user's default).
vim.api.nvim_create_autocmd("BufReadPre", {
  group = vim.api.nvim_create_augroup("ollie_answers", {}),
  pattern = "*/answers/*/answer-*.txt",
  command = "setlocal nomodeline",
})
