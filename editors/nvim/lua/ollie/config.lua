-- Options of ollie.nvim: the defaults, the user's options deep-merged over them and validated.

---@alias ollie.Keys table<string, string|false> mode ("n", "i") -> key; false (or an absent mode) maps nothing

---@class ollie.Keymaps
---@field send ollie.Keys          input: send the prompt (queued while a turn runs)
---@field inject ollie.Keys        input: inject the prompt into the running turn's next tool result
---@field stop ollie.Keys          input and transcript: interrupt the running turn
---@field take_back ollie.Keys     input, when empty: take back the latest queued prompt to edit it
---@field close ollie.Keys         input and transcript: close the chat windows (the session goes on)
---@field focus_input ollie.Keys   transcript: go to the input area (in insert mode)
---@field open_location ollie.Keys transcript: open the location, step's diff or changes under the cursor
---@field toggle_plan ollie.Keys   transcript: fold the plan's float to the step in progress, or unfold it
---@field review ollie.ReviewKeys  the changes list and the diff tab (normal mode)

---@class ollie.ReviewKeys each a normal-mode key, or false to map nothing
---@field open string|false      list: open the file's diff
---@field undo_hunk string|false diff: undo the turn's hunk under the cursor
---@field keep_hunk string|false diff: keep it, go to the next hunk
---@field undo_file string|false list and diff: undo all of the turn's changes to the file
---@field refresh string|false   list: fetch the changes again
---@field close string|false     list and diff: close

---@class ollie.ChatOptions
---@field position "right"|"left"|"bottom"|"tab"
---@field width integer           columns of a side chat
---@field height integer          lines of a bottom chat
---@field input_height integer    lines of the input area

---@class ollie.Config
---@field cmd string[]|nil        command that starts the daemon (default: ollie-lsp on PATH)
---@field root_markers string[]   files that mark the project root (the session's working directory)
---@field agent string|nil        agent config name
---@field backend string|nil      backend override
---@field model string|nil        model override
---@field env table<string,string>|nil extra environment for tools, hooks and the backend (its API keys: no step)
---@field chat ollie.ChatOptions
---@field keymaps ollie.Keymaps
---@field attach_buffers boolean  attach the client to file buffers so unsaved text can be context
---@field reload_changed boolean  `checktime` after each tool round so buffers show the agent's edits
---@field fold_tool_output boolean fold each step's output in the transcript
local M = {}

---@type ollie.Config
M.defaults = {
  cmd = nil,
  root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Makefile" },
  agent = nil,
  backend = nil,
  model = nil,
  env = nil,
  chat = { position = "right", width = 80, height = 20, input_height = 5 },
  keymaps = {
    send = { n = "<CR>", i = "<C-s>" },
    inject = { n = "<C-j>", i = "<C-j>" },
    stop = { n = "<C-c>", i = "<C-c>" },
    take_back = { n = "<Up>", i = "<Up>" },
    close = { n = "q" },
    focus_input = { n = "i" },
    open_location = { n = "<CR>" },
    toggle_plan = { n = "gp" },
    review = { open = "<CR>", undo_hunk = "du", keep_hunk = "dk", undo_file = "dU", refresh = "R", close = "q" },
  },
  attach_buffers = true,
  reload_changed = true,
  fold_tool_output = true,
}

---@type ollie.Config
M.options = vim.deepcopy(M.defaults)

local function is_list_of_strings(v)
  if type(v) ~= "table" then
    return false
  end
  for k, item in pairs(v) do
    if type(k) ~= "number" or type(item) ~= "string" then
      return false
    end
  end
  return true
end

local function keys_ok(v)
  if type(v) ~= "table" then
    return false
  end
  for mode, lhs in pairs(v) do
    if type(mode) ~= "string" or not (type(lhs) == "string" or lhs == false) then
      return false
    end
  end
  return true
end

local POSITIONS = { right = true, left = true, bottom = true, tab = true }

-- One checker per option path: a type name for vim.validate, or a function and what it expects.
---@type table<string, string|{[1]: fun(v: any): boolean, [2]: string}>
local SCHEMA = {
  cmd = { function(v) return v == nil or (is_list_of_strings(v) and #v > 0) end, "a non-empty list of strings" },
  root_markers = { is_list_of_strings, "a list of strings" },
  agent = { function(v) return v == nil or type(v) == "string" end, "a string" },
  backend = { function(v) return v == nil or type(v) == "string" end, "a string" },
  model = { function(v) return v == nil or type(v) == "string" end, "a string" },
  env = { function(v) return v == nil or type(v) == "table" end, "a table of strings" },
  ["chat.position"] = { function(v) return POSITIONS[v] ~= nil end, '"right", "left", "bottom" or "tab"' },
  ["chat.width"] = { function(v) return type(v) == "number" and v >= 10 end, "a number >= 10" },
  ["chat.height"] = { function(v) return type(v) == "number" and v >= 3 end, "a number >= 3" },
  ["chat.input_height"] = { function(v) return type(v) == "number" and v >= 1 end, "a number >= 1" },
  attach_buffers = "boolean",
  reload_changed = "boolean",
  fold_tool_output = "boolean",
}
for name in pairs(M.defaults.keymaps) do
  if name ~= "review" then
    SCHEMA["keymaps." .. name] = { keys_ok, 'a table of mode = key (e.g. { n = "<CR>" }), a key false to unmap' }
  end
end
for name in pairs(M.defaults.keymaps.review) do
  SCHEMA["keymaps.review." .. name] = { function(v) return v == false or (type(v) == "string" and v ~= "") end,
    "a key (string), or false to unmap" }
end

---Check one option with vim.validate; nil when fine, else the message.
local function check(name, value, rule)
  local ok, err
  if vim.fn.has("nvim-0.11") == 1 then
    if type(rule) == "string" then
      ok, err = pcall(vim.validate, name, value, rule)
    else
      ok, err = pcall(vim.validate, name, value, rule[1], rule[2])
    end
  else
    local spec = type(rule) == "string" and { value, rule } or { value, rule[1], rule[2] }
    ok, err = pcall(vim.validate, { [name] = spec })
  end
  return not ok and tostring(err):gsub("^.-:%d+: ", "") or nil
end

---Options in `opts` that ollie does not know, as dotted paths.
local function unknown(opts, defaults, prefix, out)
  for k, v in pairs(opts) do
    local path = prefix .. tostring(k)
    if defaults[k] == nil and SCHEMA[path] == nil then
      table.insert(out, path)
    elseif type(v) == "table" and type(defaults[k]) == "table" and not SCHEMA[path] then
      unknown(v, defaults[k], path .. ".", out)
    end
  end
  return out
end

local function get(tbl, path)
  for part in path:gmatch("[^.]+") do
    if type(tbl) ~= "table" then
      return nil
    end
    tbl = tbl[part]
  end
  return tbl
end

local function put(tbl, path, value)
  local parts = vim.split(path, ".", { plain = true })
  for i = 1, #parts - 1 do
    -- A group given as a non-table (`keymaps = { review = "x" }`) gets its defaults back.
    if type(tbl[parts[i]]) ~= "table" then
      tbl[parts[i]] = vim.deepcopy(get(M.defaults, table.concat(parts, ".", 1, i)))
    end
    tbl = tbl[parts[i]]
  end
  tbl[parts[#parts]] = value
end

---Merge user options over the defaults; a bad or unknown option falls back to its default, told once.
---@param opts ollie.Config|nil
---@return ollie.Config options, string[] problems
function M.set(opts)
  opts = opts or {}
  local problems = {}
  if type(opts) ~= "table" then
    problems, opts = { "setup() takes a table of options" }, {}
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  for _, path in ipairs(unknown(opts, M.defaults, "", {})) do
    table.insert(problems, "unknown option `" .. path .. "`")
  end
  for path, rule in pairs(SCHEMA) do
    local msg = check(path, get(merged, path), rule)
    if msg then
      table.insert(problems, "option " .. msg)
      put(merged, path, vim.deepcopy(get(M.defaults, path)))
    end
  end
  table.sort(problems)
  M.options = merged
  return merged, problems
end

---The program `name` in PATH's absolute directories. A relative entry (`.`, `bin`, `node_modules/.bin`) names a
---directory of the project the daemon starts in: a repository's `bin/ollie-lsp` would run as the user there.
---@param name string
---@return string|nil
function M.on_path(name)
  for dir in vim.gsplit(vim.env.PATH or "", ":", { plain = true }) do
    local file = dir:sub(1, 1) == "/" and vim.fs.joinpath(dir, name) or nil
    if file and vim.fn.executable(file) == 1 then
      return file
    end
  end
  return nil
end

---`cmd` with `-P` after the program when it is a Python running a module (`python3 -m ollie_lsp`): `-m` puts the
---current directory, the project, first on the import path, so a repository carrying `ollie_lsp/` would run as the
---user instead of ollie. `-P` (Python 3.11, as ollie needs) leaves it off; `-I` already does.
---@param cmd string[]
---@return string[]
function M.with_safe_path(cmd)
  if not vim.fs.basename(cmd[1]):match("^python[%d.]*$") then
    return cmd
  end
  for i = 2, #cmd do
    if cmd[i] == "-P" or cmd[i] == "-I" then
      return cmd
    elseif cmd[i] == "-m" then
      return vim.list_extend({ cmd[1], "-P" }, cmd, 2)
    end
  end
  return cmd
end

---The command that starts the daemon, its program as an absolute path.
---@return string[]|nil cmd, string|nil err
function M.server_cmd()
  local o = M.options
  if o.cmd then
    if o.cmd[1]:find("/", 1, true) then
      return M.with_safe_path(o.cmd)
    end
    local found = M.on_path(o.cmd[1])
    if not found then
      return nil, "`" .. o.cmd[1] .. "` (the `cmd` option) not found in PATH's absolute directories"
    end
    return M.with_safe_path(vim.list_extend({ found }, o.cmd, 2))
  end
  local found = M.on_path("ollie-lsp")
  if found then
    return { found }
  end
  -- Never a `.venv/bin/ollie-lsp` of the current directory: a repository may carry one, and it would run as the
  -- user, outside any sandbox, on the first :Ollie.
  -- pipx and `uv tool` install it in ~/.local/bin, which is often not on PATH yet (pipx's warning scrolls by): the
  -- fix comes first, as the message is cut to the screen's width.
  if vim.fn.executable(vim.fs.normalize("~/.local/bin/ollie-lsp")) == 1 then
    return nil, "ollie-lsp is in ~/.local/bin, which is not on PATH: run `pipx ensurepath` and restart Neovim from "
      .. "a new shell, or set require('ollie').setup({cmd = {...}})"
  end
  return nil, "ollie-lsp not found on PATH: install it with "
    .. "`pipx install ollie-agent` (Debian/Ubuntu: `sudo apt install pipx` first) or `uv tool install ollie-agent`, "
    .. "or set require('ollie').setup({cmd = {...}})"
end

---The daemon's initializationOptions: the options that are set, always a JSON object.
---@return table
function M.init_options()
  local o = M.options
  local init = {}
  for _, key in ipairs({ "agent", "backend", "model", "env" }) do
    if o[key] ~= nil and not (type(o[key]) == "table" and next(o[key]) == nil) then
      init[key] = o[key]
    end
  end
  -- An empty Lua table encodes as `[]`: the daemon warned that the options are not an object.
  return next(init) == nil and vim.empty_dict() or init
end

return M
