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
    opts = { nargs = "*", range = true, desc = "Ask ollie (with a range: about the selected lines)" },
  },
  OllieChat = { fn = function() require("ollie").open_chat() end, opts = { desc = "Open the ollie chat buffer" } },
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
    opts = { nargs = "?", desc = "Show or switch the model" },
  },
  OllieAgent = {
    fn = function(a) require("ollie").agent(a.args) end,
    opts = { nargs = "?", desc = "Show or switch the agent" },
  },
  OllieCompact = { fn = function() require("ollie").compact() end, opts = { desc = "Compact the session's context" } },
}

for name, cmd in pairs(commands) do
  vim.api.nvim_create_user_command(name, cmd.fn, cmd.opts)
end
