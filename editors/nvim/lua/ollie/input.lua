-- The input area: a small buffer of its own under the transcript, where the prompt is typed. Nothing
-- else ever writes into it. Completes slash commands (with their descriptions) and `#` context tags.
local config = require("ollie.config")
local context = require("ollie.context")

local M = {}

---The slash commands from ollie/listCommands (nil until the daemon answered once).
---@type {name: string, args: string, description: string}[]|nil
M.commands = nil
local fetching = false

---Ask the daemon for its slash commands (once; async); `on_loaded()` when this call fetched them.
---@param on_loaded fun()|nil
function M.load_commands(on_loaded)
  if M.commands or fetching then
    return
  end
  fetching = true
  require("ollie.client").request("ollie/listCommands", vim.empty_dict(), function(err, res)
    fetching = false
    if not err and res then
      M.commands = res.commands or {}
      if on_loaded then
        on_loaded()
      end
    end
  end)
end

---Map a configured key (`config.keymaps[name]`, mode -> lhs) in a buffer.
---@param buf integer
---@param name string
---@param fn function
function M.map(buf, name, fn)
  for mode, lhs in pairs(config.options.keymaps[name] or {}) do
    if lhs then
      vim.keymap.set(mode, lhs, fn, { buffer = buf, desc = "ollie: " .. name:gsub("_", " ") })
    end
  end
end

---Where the word to complete starts (0-based column) in `line` before the cursor, or nil.
local function token_start(before)
  local s = before:find("#[%w_:/%.%-~]*$")
  if s then
    return s - 1
  end
  if before:match("^/[%w_%-]*$") then
    return 0
  end
  return nil
end

---The completion items for `base` (a `/command` or a `#tag`).
---@param base string
---@return table[]
function M.items(base)
  local items = {}
  if base:sub(1, 1) == "/" then
    M.load_commands()
    for _, c in ipairs(M.commands or {}) do
      if vim.startswith(c.name, base) then
        local abbr = c.args ~= "" and (c.name .. " " .. c.args) or c.name
        table.insert(items, { word = c.name, abbr = abbr, menu = c.description, info = c.description })
      end
    end
  elseif vim.startswith(base, "#mcp:") then
    context.load_resources() -- (for the next keystroke: the list may have changed)
    for _, r in ipairs(context.resources) do
      local word = "#mcp:" .. r.server .. ":" .. r.uri
      if vim.startswith(word, base) then
        table.insert(items, { word = word, menu = r.name ~= "" and r.name or "MCP resource" })
      end
    end
  elseif vim.startswith(base, "#file:") then
    for _, path in ipairs(vim.fn.getcompletion(base:sub(7), "file")) do
      table.insert(items, { word = "#file:" .. path, menu = "file" })
    end
  else
    context.load_resources() -- (so that `#mcp:` has them by the time it is typed)
    for _, tag in ipairs(context.TAGS) do
      -- `#mcp:` only once a server offers a resource: without MCP servers it would be noise in every completion.
      local offered = tag.word ~= "#mcp:" or #context.resources > 0
      if offered and vim.startswith(tag.word, base) then
        table.insert(items, { word = tag.word, menu = tag.menu })
      end
    end
  end
  return items
end

---Completion of :Ollie's prompt: the input's (`#` tags, `/` commands; a first <Tab> before the daemon listed its
---commands is pressed again once it has).
---@param lead string
---@return string[]
function M.complete_cmdline(lead)
  if vim.startswith(lead, "/") then
    local line = vim.fn.getcmdline()
    M.load_commands(function() require("ollie.pickers").tab_again(line) end)
  end
  return vim.tbl_map(function(i) return i.word end, M.items(lead))
end

---`completefunc` of the input area (`<C-x><C-u>`; it also pops up by itself on `/` and `#`).
---@param findstart integer
---@param base string
function M.complete(findstart, base)
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local before = vim.api.nvim_get_current_line():sub(1, col)
    return token_start(before) or -3
  end
  return M.items(base)
end

---Pop the completion menu up while a `/command` or `#tag` is typed.
local function autocomplete()
  if vim.fn.pumvisible() == 1 then
    return
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local start = token_start(before)
  if start then
    local items = M.items(before:sub(start + 1))
    if #items > 0 then
      vim.fn.complete(start + 1, items)
    end
  end
end

---A new input buffer; `actions` are what its keys do (send, inject, stop, close).
---@param name string
---@param actions table<string, function>
---@return integer buf
function M.new(name, actions)
  local buf = require("ollie.render").scratch(name, "ollie-input")
  vim.bo[buf].completefunc = "v:lua.require'ollie.input'.complete"
  if vim.fn.has("nvim-0.11") == 1 then
    -- Buffer-local since 0.11: the menu must not insert a match while the user is still typing.
    vim.api.nvim_set_option_value("completeopt", "menuone,noinsert,noselect", { buf = buf })
  end
  for key, fn in pairs(actions) do
    M.map(buf, key, fn)
  end
  vim.api.nvim_create_autocmd("TextChangedI", { buffer = buf, callback = autocomplete })
  return buf
end

---The prompt typed in an input buffer.
---@param buf integer
---@return string
function M.text(buf)
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
end

---Add text at the end of what the input holds (a space between).
---@param buf integer
---@param text string
function M.append(buf, text)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local last = lines[#lines]
  lines[#lines] = last .. ((last == "" or last:match("%s$")) and "" or " ") .. text
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_set_cursor(win, { #lines, #lines[#lines] })
  end
end

local kept_ns = vim.api.nvim_create_namespace("ollie_kept")

---Show the contexts kept for the next prompt (a put-back `:'<,'>Ollie` range) at the input's right; none: nothing.
---@param buf integer
---@param contexts ollie.Context[]|nil
function M.render_kept(buf, contexts)
  vim.api.nvim_buf_clear_namespace(buf, kept_ns, 0, -1)
  local labels = require("ollie.context").labels(contexts or {})
  if #labels > 0 then
    vim.api.nvim_buf_set_extmark(buf, kept_ns, 0, 0, { virt_text_pos = "right_align",
      virt_text = { { "📎 " .. table.concat(labels, ", ") .. " goes with it", "Comment" } } })
  end
end

---Empty the input buffer (after its prompt was sent).
---@param buf integer
function M.clear(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  if vim.fn.pumvisible() == 1 and vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
    vim.fn.complete(1, {}) -- sent from insert mode: the menu of the text that went must not stay over the empty input
  end
end

return M
