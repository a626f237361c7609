--[[
Manages the UI for the chat buffer such as opening and closing splits/windows,
parsing settings and rendering extmarks.
--]]
local config = require("codecompanion.config")
local helpers = require("codecompanion.interactions.chat.helpers")
local log = require("codecompanion.utils.log")
local schema = require("codecompanion.schema")
local shared_ui = require("codecompanion.interactions.shared.ui")
local tags = require("codecompanion.interactions.shared.tags")
local utils = require("codecompanion.utils")
local yaml = require("codecompanion.utils.yaml")

local api = vim.api

local CONSTANTS = {
  NS_HEADER = api.nvim_create_namespace("CodeCompanion-headers"),
  NS_TOKENS = api.nvim_create_namespace("CodeCompanion-tokens"),
  NS_VIRTUAL_TEXT = api.nvim_create_namespace("CodeCompanion-virtual_text"),

  AUTOCMD_GROUP = "codecompanion.chat.ui",
}

---Set the LLM role based on the adapter
---@param role string|function
---@param adapter table
---@return string
local function set_llm_role(role, adapter)
  if type(role) == "function" then
    return role(adapter)
  end
  return role
end

---@class CodeCompanion.Chat.UI
---@field adapter CodeCompanion.HTTPAdapter|CodeCompanion.ACPAdapter The adapter in use for the chat
---@field aug number The autocmd group ID
---@field chat_bufnr number The buffer number of the chat
---@field chat_id number The unique ID of the chat
---@field cursor { moved_by_user: boolean, pos?: table, followed_to?: table } Cursor state tracking
---@field folds CodeCompanion.Chat.UI.Folds The folds for the chat
---@field header_ns number The namespace for the header
---@field roles table The roles in the chat
---@field winnr number The window number of the chat
---@field settings table The settings for the chat
---@field title string|nil The title of the chat window
---@field window_opts? table The window configuration options for the chat buffer

---@class CodeCompanion.Chat.UIArgs
---@field adapter CodeCompanion.HTTPAdapter|CodeCompanion.ACPAdapter
---@field aug number The autocmd group ID
---@field chat_bufnr number
---@field chat_id number
---@field roles table
---@field winnr number
---@field settings table
---@field title string|nil
---@field window_opts? table

---@class CodeCompanion.Chat.UI
local UI = {}

---@param args CodeCompanion.Chat.UIArgs
function UI.new(args)
  local self = setmetatable({
    adapter = args.adapter,
    aug = args.aug,
    chat_bufnr = args.chat_bufnr,
    chat_id = args.chat_id,
    cursor = {
      followed_to = nil,
      moved_by_user = false,
      pos = nil,
    },
    roles = args.roles,
    settings = args.settings,
    title = args.title,
    winnr = args.winnr,
    window_opts = args.window_opts,
  }, { __index = UI })

  self.folds = require("codecompanion.interactions.chat.ui.folds")

  api.nvim_create_autocmd("InsertEnter", {
    group = self.aug,
    buffer = self.chat_bufnr,
    once = true,
    desc = "Clear the virtual text in the CodeCompanion chat buffer",
    callback = function()
      api.nvim_buf_clear_namespace(self.chat_bufnr, CONSTANTS.NS_VIRTUAL_TEXT, 0, -1)
    end,
  })

  if config.display.chat.auto_scroll then
    local debounce = nil
    local debounce_ms = config.interactions.chat.opts.debounce or 0

    api.nvim_create_autocmd("CursorMoved", {
      group = self.aug,
      buffer = self.chat_bufnr,
      desc = "Track the cursor in a CodeCompanion buffer",
      callback = function()
        if not self:is_visible() then
          return
        end

        ---@return nil
        local function get_cursor_pos()
          if not self:is_visible() then
            return
          end

          if self:is_following() then
            self.cursor.moved_by_user = false
            self.cursor.pos = nil
            return
          end

          local ok, cursor = pcall(api.nvim_win_get_cursor, self.winnr)
          if not ok then
            return
          end

          self.cursor.moved_by_user = true
          self.cursor.pos = { cursor[1], cursor[2] }
        end

        -- PERF: If we're testing, skip the debounce
        if debounce_ms == 0 then
          return get_cursor_pos()
        end

        if debounce then
          pcall(function()
            debounce:stop()
          end)
        end

        debounce = vim.defer_fn(function()
          debounce = nil
          get_cursor_pos()
        end, debounce_ms)
      end,
    })

    api.nvim_create_autocmd("WinLeave", {
      group = self.aug,
      buffer = self.chat_bufnr,
      desc = "Save cursor position when leaving a CodeCompanion chat buffer",
      callback = function()
        if self:is_visible() and self.cursor.moved_by_user then
          local ok, cursor = pcall(api.nvim_win_get_cursor, self.winnr)
          if ok then
            self.cursor.pos = { cursor[1], cursor[2] }
          end
        end
      end,
    })
  end

  return self
end

---Open/create the chat window
---@param opts? table
---@return CodeCompanion.Chat.UI|nil
function UI:open(opts)
  opts = opts or {}

  if self:is_visible() then
    if config.display.chat.window.layout == "tab" and self:is_visible_non_curtab() then
      api.nvim_set_current_tabpage(api.nvim_win_get_tabpage(self.winnr))
    end
    return
  end
  if config.display.chat.start_in_insert_mode then
    -- Delay entering insert mode until after Telescope picker fully closes,
    -- since Telescope resets to normal mode on close.
    vim.schedule(function()
      vim.cmd("startinsert")
    end)
  end

  if opts.window_opts then
    if opts.window_opts.default then
      self.window_opts = nil
    else
      self.window_opts = opts.window_opts
    end
  end
  local window
  if self.window_opts then
    window = vim.tbl_deep_extend("force", {}, config.display.chat.window, self.window_opts)
  else
    window = vim.deepcopy(config.display.chat.window)
  end

  local title = window.title or " CodeCompanion "
  if self.title then
    title = string.format(" %s ", self.title)
  end

  self.winnr = shared_ui.open(self.chat_bufnr, window, {
    title = title,
    filetype = "codecompanion",
  })

  vim.bo[self.chat_bufnr].textwidth = 0

  if not opts.toggled then
    -- Put the cursor back in the original position
    if self.cursor.moved_by_user and self.cursor.pos then
      vim.schedule(function()
        if self:is_visible() then
          pcall(api.nvim_win_set_cursor, self.winnr, self.cursor.pos)
        end
      end)
    else
      self:follow()
    end
  end

  self.folds:setup(self.winnr)

  log:trace("Chat opened with ID %d", self.chat_id)
  utils.fire("ChatOpened", { bufnr = self.chat_bufnr, id = self.chat_id })

  return self
end

---Hide the chat buffer from view
---@return nil
function UI:hide()
  local layout
  if self.window_opts then
    layout = vim.tbl_deep_extend("force", {}, config.display.chat.window, self.window_opts).layout
  else
    layout = config.display.chat.window.layout
  end

  shared_ui.hide(self.winnr, self.chat_bufnr, layout)

  utils.fire("ChatHidden", { bufnr = self.chat_bufnr, id = self.chat_id })
end

---Follow the cursor in the chat buffer
---@return nil
function UI:follow()
  if not self:is_visible() then
    return
  end

  if self.cursor.moved_by_user then
    return
  end

  local last_line, last_column, line_count = self:last()
  if line_count == 0 then
    return
  end

  self.cursor.followed_to = { last_line + 1, last_column }
  api.nvim_win_set_cursor(self.winnr, self.cursor.followed_to)
end

---Is the cursor still following the response?
---@return boolean
function UI:is_following()
  local ok, cursor = pcall(api.nvim_win_get_cursor, self.winnr)
  if not ok then
    return false
  end

  -- The cursor is following the stream if it's on the last line of the buffer
  local _, _, line_count = self:last()
  if cursor[1] == line_count then
    return true
  end

  -- Or if it's still where we last placed it, with the buffer having grown beneath it
  local followed_to = self.cursor.followed_to
  return followed_to ~= nil and followed_to[1] == cursor[1] and followed_to[2] == cursor[2]
end

---Determine if the current chat buffer is active
---@return boolean
function UI:is_active()
  return shared_ui.is_active(self.chat_bufnr)
end

---Determine if the chat buffer is visible
---@return boolean
function UI:is_visible()
  return shared_ui.is_visible(self.winnr, self.chat_bufnr)
end

---Chat buffer is visible but not in the current tab
---@return boolean
function UI:is_visible_non_curtab()
  return shared_ui.is_visible_non_curtab(self.winnr, self.chat_bufnr)
end

---Get the formatted header for the chat buffer
---@param role string The role of the user
---@return string
function UI:format_header(role)
  local header = "## " .. role
  if config.display.chat.show_header_separator then
    header = string.format("%s %s", header, config.display.chat.separator)
  end

  return header
end

---Format the header in the chat buffer
---@param tbl table containing the buffer contents
---@param role string The role of the user to display in the header
---@return nil
function UI:set_header(tbl, role)
  -- If the role is the LLM then we need to swap this out for a user func
  if type(role) == "function" then
    role = set_llm_role(role, self.adapter)
  end

  table.insert(tbl, self:format_header(role))
  table.insert(tbl, "")
end

---Render the settings and any messages in the chat buffer
---@param context table Buffer context
---@param messages table
---@param opts {force_header?: boolean, stop_context_insertion?: boolean, auto_submit?: boolean, from_prompt_library?: boolean}
---@return self
function UI:render(context, messages, opts)
  opts = vim.tbl_extend(
    "keep",
    opts or {},
    { force_header = false, stop_context_insertion = false, auto_submit = nil, from_prompt_library = false }
  )

  local lines = {}

  local function spacer()
    table.insert(lines, "")
  end

  -- Prevent duplicate headers
  local last_set_role

  local function add_messages_to_buf(msgs)
    for i, msg in ipairs(msgs) do
      if (msg.role ~= config.constants.SYSTEM_ROLE) and not (msg.opts and msg.opts.visible == false) then
        -- For workflow prompts: Ensure main user role doesn't get spaced
        if i > 1 and self.last_role ~= msg.role and msg.role ~= config.constants.USER_ROLE then
          spacer()
        end

        if msg.role == config.constants.USER_ROLE and last_set_role ~= config.constants.USER_ROLE then
          if last_set_role ~= nil then
            spacer()
          end
          self:set_header(lines, self.roles.user)
        end
        if msg.role == config.constants.LLM_ROLE and last_set_role ~= config.constants.LLM_ROLE then
          self:set_header(lines, set_llm_role(self.roles.llm, self.adapter))
        end

        if msg._meta and msg._meta.tag == tags.TOOL_OUTPUT then
          table.insert(lines, "")
        end

        local trimempty = not (msg.role == "user" and msg.content == "")
        for _, text in ipairs(vim.split(msg.content or "", "\n", { plain = true, trimempty = trimempty })) do
          table.insert(lines, text)
        end

        last_set_role = msg.role
        self.last_role = msg.role

        -- The Chat:Submit method will parse the last message and it to the messages table
        if i == #msgs then
          table.remove(msgs, i)
        end
      end
    end
  end

  if config.display.chat.show_settings and self.adapter.type == "http" then
    log:trace("Showing chat settings")
    lines = { "---" }
    local keys = schema.get_ordered_keys(self.adapter)
    for _, key in ipairs(keys) do
      local setting = self.settings[key]
      if type(setting) == "function" then
        setting = setting(self.adapter)
      end

      table.insert(lines, string.format("%s: %s", key, yaml.encode(setting)))
    end
    table.insert(lines, "---")
    spacer()
  end

  -- NOTE: Typically, we wouldn't want to render a header if there are existing
  -- messages. However, provide an option to force the header to be rendered
  -- for scenarios where there is no user prompt
  if opts.force_header or (vim.tbl_isempty(messages) or not helpers.has_user_messages(messages)) then
    log:trace("Setting the header for the chat buffer")
    self:set_header(lines, self.roles.user)
    spacer()
  else
    log:trace("Setting the messages in the chat buffer")
    add_messages_to_buf(messages)
    -- Ensure the buffer ends with an empty line so the cursor is placed
    -- correctly (after the last character) when auto_submit is false and
    -- the chat was opened from the prompt library with non-empty user prompt
    if opts.auto_submit == false and opts.from_prompt_library and #lines > 0 and lines[#lines] ~= "" then
      spacer()
    end
  end

  -- If the user has visually selected some text, add that to the chat buffer
  if context and context.is_visual and not opts.stop_context_insertion then
    log:trace("Adding visual selection to chat buffer")
    table.insert(lines, "````" .. context.filetype)
    for _, line in ipairs(context.lines) do
      table.insert(lines, line)
    end
    table.insert(lines, "````")
  end

  self:unlock_buf()
  api.nvim_buf_set_lines(self.chat_bufnr, 0, -1, false, lines)
  self:render_headers()

  self:follow()

  return self
end

---Render the headers in the chat buffer and apply extmarks
---@return nil
function UI:render_headers()
  if not config.display.chat.show_header_separator then
    return
  end

  local separator = config.display.chat.separator
  local lines = api.nvim_buf_get_lines(self.chat_bufnr, 0, -1, false)
  local llm_role = set_llm_role(self.roles.llm, self.adapter)

  for line, content in ipairs(lines) do
    if content:match("^## " .. vim.pesc(self.roles.user)) or content:match("^## " .. vim.pesc(llm_role)) then
      local col = vim.fn.strwidth(content) - vim.fn.strwidth(separator)

      api.nvim_buf_set_extmark(self.chat_bufnr, CONSTANTS.NS_HEADER, line - 1, col, {
        virt_text_win_col = col,
        virt_text = { { string.rep(separator, vim.go.columns), "CodeCompanionChatSeparator" } },
        priority = 100,
      })

      -- Set the highlight group for the header
      api.nvim_buf_set_extmark(self.chat_bufnr, CONSTANTS.NS_HEADER, line - 1, 0, {
        end_col = col + 1,
        hl_group = "CodeCompanionChatHeader",
      })
    end
  end
  log:trace("Rendering headers in the chat buffer")
end

---Set the welcome message in the chat buffer
---@param message string The intro message to display
---@return CodeCompanion.Chat.UI|nil
function UI:set_intro_msg(message)
  if self.intro_message then
    return self
  end

  if not config.display.chat.start_in_insert_mode then
    local extmark_id = self:set_virtual_text(message, "eol")
    api.nvim_create_autocmd("InsertEnter", {
      buffer = self.chat_bufnr,
      callback = function()
        self:clear_virtual_text(extmark_id)
      end,
    })
    self.intro_message = true
  end

  return self
end

---Set virtual text in the chat buffer
---@param message string
---@param method? string "eol", "inline" etc
---@param range? table<number, number>
---@return number The id of the extmark
function UI:set_virtual_text(message, method, range)
  range = range or { api.nvim_buf_line_count(self.chat_bufnr) - 1, 0 }

  return api.nvim_buf_set_extmark(self.chat_bufnr, CONSTANTS.NS_VIRTUAL_TEXT, range[1], range[2], {
    virt_text = { { message, "CodeCompanionVirtualText" } },
    virt_text_pos = method or "eol",
  })
end

---Clear virtual text in the chat buffer
---@param extmark_id number The id of the extmark to delete
---@return nil
function UI:clear_virtual_text(extmark_id)
  api.nvim_buf_del_extmark(self.chat_bufnr, CONSTANTS.NS_VIRTUAL_TEXT, extmark_id)
end

---Get the last line, column and line count in the chat buffer
---@return number, number, number
function UI:last()
  local line_count = api.nvim_buf_line_count(self.chat_bufnr)

  local last_line = line_count - 1
  if last_line < 0 then
    return 0, 0, line_count
  end

  local last_line_content = api.nvim_buf_get_lines(self.chat_bufnr, -2, -1, false)
  if not last_line_content or #last_line_content == 0 then
    return last_line, 0, line_count
  end

  local last_column = #last_line_content[1]

  return last_line, last_column, line_count
end

---Display the tokens in the chat buffer
---@param args { parser: table, start_row: number, tokens?: number|table }
---@return nil
function UI:display_tokens(args)
  -- NOTE: Not handling token tables yet
  if not config.display.chat.show_token_count or type(args.tokens) ~= "number" then
    return
  end

  local formatter = config.display.chat.token_count
  if type(formatter) == "function" then
    require("codecompanion.utils.tokens").display({
      bufnr = self.chat_bufnr,
      ns_id = CONSTANTS.NS_TOKENS,
      parser = args.parser,
      start_row = args.start_row,
      token_str = formatter(args.tokens, self.adapter),
    })
  end
end

---Fold code under the user's heading in the chat buffer
---@return self
function UI:fold_code()
  local query = vim.treesitter.query.parse(
    "markdown",
    [[
(section
(
 (atx_heading
  (atx_h2_marker)
  heading_content: (_) @role
)
([
  (fenced_code_block)
  (indented_code_block)
] @code (#trim! @code))
))
]]
  )

  local parser = vim.treesitter.get_parser(self.chat_bufnr, "markdown")
  local tree = parser:parse()[1]
  vim.o.foldmethod = "manual"

  local role
  for _, matches in query:iter_matches(tree:root(), self.chat_bufnr) do
    local match = {}
    for id, nodes in pairs(matches) do
      local node = type(nodes) == "table" and nodes[1] or nodes
      match = vim.tbl_extend("keep", match, {
        [query.captures[id]] = {
          node = node,
        },
      })
    end

    if match.role then
      role = vim.trim(vim.treesitter.get_node_text(match.role.node, self.chat_bufnr))
      if role:match(self.roles.user) and match.code then
        local start_row, _, end_row, _ = match.code.node:range()
        if start_row < end_row then
          api.nvim_buf_call(self.chat_bufnr, function()
            vim.cmd(string.format("%d,%dfold", start_row, end_row))
          end)
        end
      end
    end
  end

  return self
end

---Add a line break to the chat buffer
---@return nil
function UI:add_line_break()
  local _, _, line_count = self:last()
  local was_following = self:is_following()

  self:unlock_buf()
  api.nvim_buf_set_lines(self.chat_bufnr, line_count, line_count, false, { "" })
  self:lock_buf()

  self:move_cursor(was_following)
end

---Update the cursor position in the chat buffer
---@param was_following boolean
---@return nil
function UI:move_cursor(was_following)
  if not config.display.chat.auto_scroll then
    return
  end

  if was_following then
    return self:resume_following()
  end

  -- Whilst the user is in the chat buffer, assume the cursor is theirs as `CursorMoved` is debounced
  if not self:is_active() then
    self:follow()
  end
end

---Set the cursor to follow the stream
---@return nil
function UI:resume_following()
  if not config.display.chat.auto_scroll then
    return
  end

  self.cursor.moved_by_user = false
  self.cursor.pos = nil
  self:follow()
end

---Lock the chat buffer from editing
---@return nil
function UI:lock_buf()
  vim.bo[self.chat_bufnr].modified = false
  vim.bo[self.chat_bufnr].modifiable = false
end

---Unlock the chat buffer for editing
---@return nil
function UI:unlock_buf()
  vim.bo[self.chat_bufnr].modified = false
  vim.bo[self.chat_bufnr].modifiable = true
end

return UI
