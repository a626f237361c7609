---@class CodeCompanion.Command
---@field cmd string
---@field callback fun(args:table)
---@field opts CodeCompanion.Command.Opts

---@class CodeCompanion.Command.Opts:table
---@field desc string

local codecompanion = require("codecompanion")
local config = require("codecompanion.config")
local triggers = require("codecompanion.triggers")

local _cached_adapters = {}

---Get the available adapters from the config
---@param type? "all"|"http" Defaults to "all"
---@return string[]
local function get_adapters(type)
  type = type or "all"

  if not _cached_adapters[type] then
    local config_adapters
    if type == "http" then
      config_adapters = vim.deepcopy(config.adapters.http)
    else
      config_adapters = vim.tbl_deep_extend("force", {}, config.adapters.acp, config.adapters.http)
    end

    _cached_adapters[type] = vim
      .iter(config_adapters)
      :filter(function(k, _)
        return k ~= "acp" and k ~= "http" and k ~= "extend" and k ~= "opts"
      end)
      :map(function(k, _)
        return k
      end)
      :totable()
  end

  return _cached_adapters[type]
end

-- Setup the commands used during testing
if config.opts.test_mode then
  require("codecompanion.commands.diff").setup()
end

---@type CodeCompanion.Command[]
return {
  {
    cmd = "CodeCompanion",
    callback = function(opts)
      -- Detect the user calling a prompt from the prompt library
      if opts.fargs[1] and string.sub(opts.fargs[1], 1, 1) == triggers.mappings.slash_commands then
        -- Get the prompt minus the slash
        local prompt = string.sub(opts.fargs[1], 2)

        if #opts.fargs > 1 then
          opts.user_prompt = table.concat(opts.fargs, " ", 2)
        end
        return codecompanion.prompt(prompt, opts)
      end

      -- If the user calls the command with no prompt, then ask for their input
      if #vim.trim(opts.args or "") == 0 then
        vim.ui.input({ prompt = config.display.action_palette.prompt }, function(input)
          if #vim.trim(input or "") == 0 then
            return
          end
          opts.args = input
          return codecompanion.inline(opts)
        end)
      else
        codecompanion.inline(opts)
      end
    end,
    opts = {
      desc = "Use the CodeCompanion Inline Assistant",
      range = true,
      nargs = "*",
      -- Reference:
      -- https://github.com/nvim-neorocks/nvim-best-practices?tab=readme-ov-file#speaking_head-user-commands
      complete = function(arg_lead, cmdline, cursor_pos)
        local param_key = arg_lead:match("^(%w+)=$")
        if param_key == "adapter" then
          local adapters = get_adapters("http")
          return vim
            .iter(adapters)
            :map(function(adapter)
              return "adapter=" .. adapter
            end)
            :totable()
        end

        local args = vim.split(cmdline, "%s+")
        local current_arg_index = #args

        -- If we're typing in the middle of an argument, adjust the index
        if cmdline:sub(cursor_pos, cursor_pos) ~= " " and arg_lead ~= "" then
          current_arg_index = current_arg_index
        else
          current_arg_index = current_arg_index + 1
        end

        -- Always provide completions for adapters, prompt library, and editor context
        local completions = {}
        local adapters = get_adapters("http")
        local prompt_aliases = require("codecompanion.helpers").get_prompt_aliases()

        -- Add adapters
        for _, adapter in ipairs(adapters) do
          table.insert(completions, "adapter=" .. adapter)
        end

        -- Add prompt library items
        vim.iter(prompt_aliases):each(function(k)
          table.insert(completions, triggers.mappings.slash_commands .. k)
        end)

        -- Add inline editor context
        for key, _ in pairs(config.interactions.inline.editor_context) do
          if key ~= "opts" then
            table.insert(completions, string.format("%s{%s}", triggers.mappings.editor_context, key))
          end
        end

        -- Filter based on what the user is typing
        return vim
          .iter(completions)
          :filter(function(completion)
            return completion:find(vim.pesc(arg_lead), 1, true) == 1
          end)
          :totable()
      end,
    },
  },
  {
    cmd = "CodeCompanionChat",
    callback = function(opts)
      local params = {}
      local prompt = {}
      local subcommand = nil
      local subcommands = { add = true, changes = true, refreshcache = true, toggle = true }

      for _, arg in ipairs(opts.fargs) do
        local key, value = arg:match("^(%w+)=(.+)$")
        if key and value then
          params[key] = value
        elseif subcommands[arg:lower()] then
          subcommand = arg:lower()
        else
          -- Anything else is a prompt
          table.insert(prompt, arg)
        end
      end

      opts.params = params
      opts.subcommand = subcommand

      if #prompt > 0 then
        opts.user_prompt = table.concat(prompt, " ")
        opts.args = opts.user_prompt
      end

      codecompanion.chat(opts)
    end,
    opts = {
      desc = "Work with a CodeCompanion chat buffer",
      range = true,
      nargs = "*",
      -- Reference:
      -- https://github.com/nvim-neorocks/nvim-best-practices?tab=readme-ov-file#speaking_head-user-commands
      complete = function(arg_lead, cmdline, _cursor_pos)
        -- Check if we're completing a parameter value (e.g., "adapter=" or "model=")
        local param_key = arg_lead:match("^(%w+)=$")
        if param_key == "adapter" then
          return vim
            .iter(get_adapters())
            :map(function(adapter)
              return "adapter=" .. adapter
            end)
            :totable()
        elseif param_key == "model" then
          -- Extract the adapter from the command line
          local adapter_name = cmdline:match("adapter=(%S+)")
          if adapter_name then
            local config_adapters = vim.tbl_deep_extend("force", {}, config.adapters.http)
            local adapter_config = config_adapters[adapter_name]
            if adapter_config then
              local ok, adapter = pcall(require("codecompanion.adapters").resolve, adapter_config)

              if ok and adapter and adapter.type == "http" then
                if adapter.schema and adapter.schema.model and adapter.schema.model.choices then
                  local choices = adapter.schema.model.choices

                  if type(choices) == "function" then
                    local ok_fn, result = pcall(choices, adapter, { async = false })
                    if ok_fn and result then
                      choices = result
                    else
                      return {}
                    end
                  end

                  -- Extract model names from choices (if choices is not nil)
                  if type(choices) == "table" then
                    local models = vim.islist(choices) and choices or vim.tbl_keys(choices)
                    return vim
                      .iter(models)
                      :map(function(model)
                        return "model=" .. model
                      end)
                      :totable()
                  end
                end
              end
            end
          end
          return {}
        elseif param_key == "command" then
          -- Extract the adapter from the command line
          local adapter_name = cmdline:match("adapter=(%S+)")
          if adapter_name then
            local config_adapters = vim.tbl_deep_extend("force", {}, config.adapters.acp)
            local adapter_config = config_adapters[adapter_name]
            if adapter_config then
              local ok, adapter = pcall(require("codecompanion.adapters").resolve, adapter_config)

              if ok and adapter.commands then
                local commands_list = vim
                  .iter(adapter.commands)
                  :filter(function(k, _)
                    return k ~= "selected"
                  end)
                  :map(function(key, _)
                    if type(key) == "string" then
                      return "command=" .. key
                    end
                  end)
                  :totable()

                table.sort(commands_list)

                return commands_list
              end
              return {}
            end
          end
        end

        -- Only show general completions when at the start (no partial param typed)
        if cmdline:match("^['<,'>]*CodeCompanionChat[!]*%s+$") or arg_lead == "" then
          local completions = {
            "adapter=",
            "command=",
            "model=",
            "Toggle",
            "Add",
            "Changes",
            "RefreshCache",
          }

          return vim
            .iter(completions)
            :filter(function(key)
              return key:find(vim.pesc(arg_lead), 1, true) == 1
            end)
            :totable()
        end

        return {}
      end,
    },
  },
  {
    cmd = "CodeCompanionCodeReview",
    callback = function(opts)
      local subcommands = {
        accept = true,
        all = true,
        approve = true,
        comment = true,
        comments = true,
        ignore = true,
        share = true,
        start = true,
      }
      local arg = opts.fargs[1] and opts.fargs[1]:lower() or nil
      opts.subcommand = subcommands[arg] and arg or nil
      codecompanion.code_review(opts)
    end,
    opts = {
      desc = "Review the changes an agent has made",
      range = true,
      nargs = "*",
      complete = function(arg_lead)
        return vim
          .iter({ "Accept", "All", "Approve", "Comment", "Comments", "Ignore", "Share", "Start" })
          :filter(function(key)
            return key:find(vim.pesc(arg_lead), 1, true) == 1
          end)
          :totable()
      end,
    },
  },
  {
    cmd = "CodeCompanionCmd",
    callback = function(opts)
      codecompanion.cmd(opts)
    end,
    opts = {
      desc = "Prompt the LLM to write a command for the command-line",
      range = false,
      nargs = "*",
    },
  },
  {
    cmd = "CodeCompanionCLI",
    callback = function(opts)
      local params = {}
      local prompt_parts = {}

      for _, arg in ipairs(opts.fargs) do
        local key, value = arg:match("^(%w+)=(.+)$")
        if key and value then
          params[key] = value
        else
          table.insert(prompt_parts, arg)
        end
      end

      local prompt = table.concat(prompt_parts, " ")
      local cli_opts = { args = opts, submit = opts.bang }

      if params.agent then
        cli_opts.agent = params.agent
      end

      -- :CodeCompanionCLI Ask — open prompt input buffer
      if prompt == "Ask" then
        cli_opts.prompt = true
        codecompanion.cli(cli_opts)
        return
      end

      -- :CodeCompanionCLI (no prompt) — new CLI interaction or send visual selection
      if #vim.trim(prompt) == 0 then
        if opts.range > 0 then
          codecompanion.cli("", cli_opts)
        else
          codecompanion.cli(cli_opts)
        end
        return
      end

      -- :CodeCompanionCLI prompt — send to last or create new
      codecompanion.cli(prompt, cli_opts)
    end,
    opts = {
      desc = "Send a prompt to a CLI agent or open the CLI input buffer",
      bang = true,
      range = true,
      nargs = "*",
      complete = function(arg_lead, cmdline, _cursor_pos)
        local param_key = arg_lead:match("^(%w+)=$")
        if param_key == "agent" then
          local agents = vim.tbl_keys(config.interactions.cli.agents)
          return vim
            .iter(agents)
            :map(function(agent)
              return "agent=" .. agent
            end)
            :totable()
        end

        if cmdline:match("^['<,'>]*CodeCompanionCLI[!]*%s+$") or arg_lead == "" then
          local completions = { "Ask", "agent=" }
          return vim
            .iter(completions)
            :filter(function(key)
              return key:find(vim.pesc(arg_lead), 1, true) == 1
            end)
            :totable()
        end

        return {}
      end,
    },
  },
  {
    cmd = "CodeCompanionActions",
    callback = function(opts)
      if opts.fargs[1] and opts.fargs[1]:lower() == "refresh" then
        local context = require("codecompanion.utils.context").get(vim.api.nvim_get_current_buf())
        require("codecompanion.action_palette").refresh_cache(context)
      end

      -- If we're in a chat buffer, open the chat command palette instead
      local bufnr = vim.api.nvim_get_current_buf()
      if vim.bo[bufnr].filetype == "codecompanion" then
        local chat = require("codecompanion.interactions.chat").buf_get_chat(bufnr)
        if chat then
          return require("codecompanion.interactions.chat.action_palette").launch(chat)
        end
      end

      codecompanion.actions(opts)
    end,
    opts = {
      desc = "Open the CodeCompanion actions palette",
      range = true,
      nargs = "*",
      complete = function(arg_lead, cmdline, _cursor_pos)
        return { "Refresh" }
      end,
    },
  },
}
