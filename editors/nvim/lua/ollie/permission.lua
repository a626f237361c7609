-- Approval: the `ollie/permission` question (the step, its diff preview, four answers) and :OllieApproval.
local requests = require("ollie.requests")

local M = {}

---The approval modes `ollie/setApproval` takes, for :OllieApproval's completion and picker.
M.MODES = { "ask", "auto-edit", "auto", "read-only" }

local MODE_HELP = {
  ask = "ask before edits and commands",
  ["auto-edit"] = "edit freely, ask before commands",
  auto = "run everything (the sandbox still applies)",
  ["read-only"] = "no edits, read-only commands only",
}

---One line for a float or a prompt: no newlines, no control characters.
local function one_line(s)
  return (tostring(s or ""):gsub("[%c]+", " "))
end

---A path as drawn: each control and bidi override as an escape (`\u202e`), as the daemon shows the model's code: the
---terminal obeys a U+202E, so the name read would not be the file's (the path itself still opens it).
---@param path string
---@return string
function M.shown_path(path)
  local function code(c) return ("\\u%04x"):format(vim.fn.char2nr(c)) end
  -- U+061C, U+200B-U+200F, U+2028-U+202E, U+2060-U+2069 (as UTF-8 bytes: Neovim's Lua has no utf8 library).
  return (tostring(path or ""):gsub("[%z\1-\31\127]", function(c) return ("\\x%02x"):format(c:byte()) end)
    :gsub("\216\156", code):gsub("\226\128[\139-\143\168-\174]", code):gsub("\226\129[\160-\169]", code))
end

---A network question's `host:port` (an IPv6 literal in brackets), or nil for any other step.
---@param step table the ollie/permission step
---@return string|nil
function M.network_target(step)
  local net = step.network
  if type(net) ~= "table" or type(net.host) ~= "string" or type(net.port) ~= "number" then
    return nil
  end
  local host = one_line(net.host)
  return (host:find(":", 1, true) and ("[" .. host .. "]") or host) .. ":" .. net.port
end

---Where an edit's diff preview lands: `path:12`, `path:12-15` (the lines of the file as it is now, first to last
---changed), `path (new file)`; the path as the daemon gives it, relative to the workspace.
---@param diff table the step's `{path, oldText, newText}`
---@return string
function M.diff_place(diff)
  local path = M.shown_path(diff.path)
  if type(diff.oldText) ~= "string" then
    return path .. " (new file)"
  end
  local new = type(diff.newText) == "string" and diff.newText or ""
  local first, last
  for _, h in ipairs(vim.diff(diff.oldText, new, { result_type = "indices" }) --[[@as integer[][] ]]) do
    -- {old start, old count, new start, new count}: an insertion (no old line) sits after its old start.
    local from = math.max(1, h[1])
    local to = math.max(from, h[1] + h[2] - 1)
    first, last = math.min(first or from, from), math.max(last or to, to)
  end
  if not first then
    return path
  end
  return path .. ":" .. first .. (last > first and ("-" .. last) or "")
end

---The preview's lines: title, where, what "Allow always" covers, and the unified diff when there is one.
---@param params table the ollie/permission params
---@return string[] lines, boolean has_diff
function M.preview_lines(params)
  local step = params.step or {}
  local target = M.network_target(step)
  if target then
    -- A step's connection out, held by the egress proxy meanwhile: the host once, then the step that asked (the
    -- title, `connect to <host>:<port> (network; step: <step>)`, and `always` name the host again).
    local title = one_line(step.title)
    local lines = { "Allow network access to " .. target .. "?",
      "  step: " .. (title:match("^connect to .- %(network; step: (.*)%)$") or title) }
    if params.always and params.always ~= "" then
      local always = one_line(params.always):gsub("^connections to " .. vim.pesc(target), "connections there")
      table.insert(lines, "  \"Always allow\" covers " .. always)
    end
    return lines, false
  end
  local lines = { "ollie asks to: " .. one_line(step.title) }
  local diff = type(step.diff) == "table" and step.diff or nil
  local placed = false
  for _, loc in ipairs(step.locations or {}) do
    -- The edit's file: the lines it changes, from its diff (the step's location has no line before it runs).
    local here = diff and not placed and loc.path == diff.path
    placed = placed or here
    table.insert(lines, "  at " .. (here and M.diff_place(diff)
      or (M.shown_path(loc.path) .. (loc.line and (":" .. loc.line) or ""))))
  end
  if diff and not placed then
    table.insert(lines, "  at " .. M.diff_place(diff))
  end
  -- A batch's edits, each with its diff (it was asked with their command lines alone); <C-d> from the picker reaches
  -- the last.
  local diffs = diff and { diff } or vim.tbl_filter(function(d) return type(d) == "table" end,
    type(step.diffs) == "table" and step.diffs or {})
  -- Her unsaved lines in a file it edits go to disk with the edit (the steps after it see them): said before she
  -- answers, as VS Code says it (only the chat's note after the call said so: too late to finish or undo them first).
  local noted = {}
  for _, d in ipairs(diffs) do
    local buf = type(d.path) == "string" and not noted[d.path]
      and require("ollie.editor_tools").buffer_of(vim.fn.fnamemodify(d.path, ":p"))
    if buf and vim.bo[buf].modified then
      noted[d.path] = true
      local note = "  %s has your unsaved changes: allowing saves them with the edit"
      table.insert(lines, note:format(M.shown_path(d.path)))
    end
  end
  local outside = type(step.outside) == "table" and step.outside or {}
  -- A program's code, whole (its title shows the first line alone).
  if type(step.code) == "string" and step.code ~= "" then
    table.insert(lines, "  code:")
    for _, l in ipairs(vim.split(step.code, "\n", { plain = true })) do
      table.insert(lines, "    " .. one_line(l))
    end
  end
  -- What it runs outside the sandbox, exactly: this one question covers leaving it too.
  for _, what in ipairs(outside) do
    table.insert(lines, "  runs outside the sandbox:")
    for _, l in ipairs(vim.split(tostring(what), "\n", { plain = true, trimempty = true })) do
      table.insert(lines, "    " .. one_line(l))
    end
  end
  if params.always and params.always ~= "" then
    -- A workspace's MCP server (step id `mcp/<name>`): its "always" says how long itself (the workspace, from now on).
    local lasting = type(step.id) == "string" and step.id:match("^mcp/") ~= nil
    local span = lasting and "" or " in this session"
    table.insert(lines, "  \"Allow always\" covers " .. one_line(params.always) .. span)
  end
  for _, d in ipairs(diffs) do
    local body = vim.diff(type(d.oldText) == "string" and d.oldText or "", type(d.newText) == "string" and d.newText
      or "", { result_type = "unified", ctxlen = 3 }) --[[@as string]]
    vim.list_extend(lines, { "", "--- a/" .. M.shown_path(d.path), "+++ b/" .. M.shown_path(d.path) })
    vim.list_extend(lines, vim.split(body, "\n", { trimempty = true }))
  end
  if type(step.diffsMore) == "number" and step.diffsMore > 0 then
    vim.list_extend(lines, { "", ("(%d more edit%s not previewed)"):format(step.diffsMore,
      step.diffsMore == 1 and "" or "s") })
  end
  return lines, #diffs > 0
end

---Show the preview in a float that does not take the focus; returns a function that closes it.
---@param lines string[]
---@param has_diff boolean
---@return fun()
local function show_preview(lines, has_diff)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  if has_diff then
    vim.bo[buf].filetype = "diff"
  end
  -- Its code and diff are the model's: an address in them, or a link a step made, is no file to open (chatwin.lua).
  local chatwin = require("ollie.chatwin")
  chatwin.guard_file_keys(buf, function() chatwin.open_named() end)
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local most = math.max(3, math.floor(vim.o.lines / 2))
  local win = vim.api.nvim_open_win(buf, false, {
    relative = "editor", row = 1, col = math.floor((vim.o.columns - width) / 2), width = width,
    height = math.min(#lines, most),
    style = "minimal", border = "rounded", title = " ollie: approve? ", title_pos = "center", focusable = true,
  })
  -- A long line (a step's command) wraps at a word, indented: the float as tall as the wrapped text, so the lines
  -- after it still show.
  vim.wo[win].linebreak, vim.wo[win].breakindent = true, true
  local total = vim.api.nvim_win_text_height(win, {}).all
  vim.api.nvim_win_set_height(win, math.min(total, most))
  if total > most then -- cut at half the screen: said, with how to see the rest (a batch's last calls were unseen)
    vim.api.nvim_win_set_config(win, { footer = (" %d lines do not fit: <C-d>/<C-u> scroll "):format(total - most),
      footer_pos = "center" })
  end
  M.last_preview = { buf = buf, lines = lines, win = win }
  vim.w[win].ollie_question = true
  return function()
    for _, shown in ipairs(vim.fn.win_findbuf(buf)) do -- (moved to another tab: a window of its own there)
      vim.api.nvim_win_close(shown, true)
    end
  end
end

---A question's floats (its preview, its own picker) follow the user to the tab they go to: a float stays in its
---tabpage, and there the chat said "waiting for your answer" with nothing to answer. Each opens again here on its
---buffer (its keys are the buffer's), then the one left behind closes.
local function follow_to_tab()
  if #M.waiting == 0 then
    return
  end
  local tab = vim.api.nvim_get_current_tabpage()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.w[win].ollie_question and vim.api.nvim_win_get_tabpage(win) ~= tab then
      local config = vim.api.nvim_win_get_config(win)
      config.style = "minimal"
      local moved = vim.api.nvim_open_win(vim.api.nvim_win_get_buf(win), vim.w[win].ollie_focus == true, config)
      for _, option in ipairs({ "cursorline", "linebreak", "breakindent" }) do
        vim.wo[moved][option] = vim.wo[win][option]
      end
      vim.api.nvim_win_set_cursor(moved, vim.api.nvim_win_get_cursor(win))
      vim.w[moved].ollie_question, vim.w[moved].ollie_focus = true, vim.w[win].ollie_focus
      if M.last_preview and M.last_preview.win == win then
        M.last_preview.win = moved
      end
      vim.api.nvim_win_close(win, true)
    end
  end
end
vim.api.nvim_create_autocmd("TabEnter", { group = vim.api.nvim_create_augroup("ollie_question", {}),
  callback = function() vim.schedule(follow_to_tab) end }) -- (after `:tabnew file` opened the file in its window)

---Title the preview float: whether the choices wait for the user to stop typing.
---@param waiting boolean
local function preview_title(waiting)
  local win = M.last_preview and M.last_preview.win
  if win and vim.api.nvim_win_is_valid(win) then
    -- In insert mode they wait for <Esc> (a pause in typing is no answer): said, or a user who stopped typing there
    -- sees nothing come.
    local insert = vim.api.nvim_get_mode().mode:find("^i") ~= nil
    local title = waiting and (insert and " ollie: approve? (once you stop typing: <Esc>) "
      or " ollie: approve? (once you stop typing) ") or " ollie: approve? "
    vim.api.nvim_win_set_config(win, { title = title, title_pos = "center" })
  end
end

-- When the user last typed a key: a question must not pop up in the middle of their typing, since its picker
-- takes the keyboard and what they were typing (`:OllieChat`, a prompt) would answer it.
local last_key_ms = 0
local IDLE_MS = 700
local watching = false
-- A question taken away while its buttons had the keyboard: the next one's buttons wait this long after, so the
-- `1<CR>` the user was typing for the one that went lands nowhere, not on one they have not seen.
local SETTLE_MS = 1500
local settled_ms = 0

---Start noting when keys are typed (chat.lua calls it when a chat is made, before any question can come).
function M.watch_keys()
  if not watching then
    watching = true
    vim.on_key(function() last_key_ms = vim.uv.hrtime() / 1e6 end, vim.api.nvim_create_namespace("ollie_keys"))
  end
end

-- Modes in which nothing is being typed (normal, visual): not insert, the command line or an operator.
local RESTING = { n = true, nt = true, v = true, V = true, ["\22"] = true }

---Whether the user is idle: resting (normal or visual mode), no key typed for a moment, no menu or prompt open.
---@return boolean
local function idle()
  local mode = vim.api.nvim_get_mode()
  local now = vim.uv.hrtime() / 1e6
  return RESTING[mode.mode] and not mode.blocking and vim.fn.pumvisible() == 0
    and now - last_key_ms >= IDLE_MS and now >= settled_ms
end

---Run `fn` once the user is idle (at once when they are); never when the question was withdrawn meanwhile.
---@param q ollie.Question
---@param fn fun()
local function when_idle(q, fn)
  if q.done then
    return
  end
  if idle() then
    return fn()
  end
  vim.defer_fn(function() when_idle(q, fn) end, 150)
end

---@class ollie.Question
---@field session string|nil
---@field title string
---@field done boolean answered or withdrawn: a later answer does nothing
---@field wins table<integer, boolean> the windows open before it was asked (the picker's are the new ones)
---@field close fun()
---@field request string|nil the request's id (`requestId`), which a `$/cancelRequest` names
---@field select fun(items: any[], opts: table, on_choice: fun(item: any|nil)) vim.ui.select, or float_select in
---place of Neovim's own
---@field showing boolean|nil its vim.ui.select is on screen (not while it waits for the user to stop typing)
---@field typing string|nil the prompt of its feedback input while that is open

---Questions waiting for the user.
---@type ollie.Question[]
M.waiting = {}

local function forget(q)
  q.done = true
  M.waiting = vim.tbl_filter(function(w) return w ~= q end, M.waiting)
  pcall(vim.cmd.redrawstatus, { bang = true }) -- a redraw only: never an error where the editor cannot draw now
end

---Whether a question of `session` waits for the user's answer.
---@param session string|nil
---@return boolean
function M.asks(session)
  for _, q in ipairs(M.waiting) do
    if q.session == session then
      return true
    end
  end
  return false
end

---Take question `q` away: close its float and the picker's windows; any late answer is then nothing.
---@param q ollie.Question
local function take_away(q)
  -- Not answered: the daemon dropped the request, and an answer to it would come back as an error.
  forget(q)
  q.close()
  if q.showing or q.typing then
    settled_ms = vim.uv.hrtime() / 1e6 + SETTLE_MS
  end
  if q.typing and vim.fn.getcmdtype() == "@" and vim.fn.getcmdprompt() == q.typing then
    -- Neovim's own vim.ui.input waits in input(), this question's still (not a prompt of the user's since): <C-c>
    -- ends it (taken as nothing), and <CR> the "Press ENTER" prompt the picker's lines above it leave, if any.
    vim.api.nvim_feedkeys(vim.keycode("<C-c>"), "n", false)
    vim.schedule(function()
      if vim.api.nvim_get_mode().mode == "r" then
        vim.api.nvim_feedkeys(vim.keycode("<CR>"), "n", false)
      end
    end)
  end
  -- A picker in a float (telescope, fzf-lua, snacks, dressing): its windows are the floats new since.
  local current = vim.api.nvim_get_current_win()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if not q.wins[win] and vim.api.nvim_win_get_config(win).relative ~= "" then
      pcall(vim.api.nvim_win_close, win, true)
      if win == current and vim.fn.mode():find("^i") then
        vim.cmd("stopinsert") -- the picker's prompt had the cursor; the user's own typing elsewhere stays
      end
    end
  end
end

---The daemon waits no more for the questions of `session` (their turn was interrupted or ended; true: every one, its
---daemon stopped): take them away. Returns the withdrawn steps' titles.
---@param session string|boolean|nil
---@return string[]
function M.withdraw(session)
  local titles = {}
  for _, q in ipairs(vim.list_slice(M.waiting)) do
    if session == true or q.session == session then
      take_away(q)
      table.insert(titles, q.title)
    end
  end
  return titles
end

---`$/cancelRequest {id}`: the daemon gave up on request `id` mid-turn (a connection's question whose step ended, a
---question nobody answered in time). Its question goes, and the chats of its session say so.
---@param params table
function M.cancelled(params)
  for _, q in ipairs(vim.list_slice(M.waiting)) do
    if q.request ~= nil and q.request == (params or {}).id then
      take_away(q)
      for _, chat in ipairs(require("ollie.chat").all_by_session(q.session)) do
        chat.transcript:note("question withdrawn (nothing waits for its answer any more): " .. q.title,
          "OllieTurnEnd")
      end
    end
  end
end

---The screen rows (0-based) that hold a statusline: each window's, the global one's (laststatus=3).
---@return table<integer, boolean>
local function statusline_rows()
  local rows = {}
  for _, info in ipairs(vim.fn.getwininfo()) do
    if info.tabnr == vim.fn.tabpagenr() and vim.api.nvim_win_get_config(info.winid).relative == "" then
      rows[info.winrow - 1 + info.winbar + info.height] = true -- winrow is 1-based and counts the winbar
    end
  end
  rows[vim.o.lines - vim.o.cmdheight - 1] = true
  return rows
end

---The row for a float `height` rows tall (borders included): under the question's preview (else near the bottom),
---moved down, else up, off every statusline (it hid the chat's, which says what the session waits for); with no
---such row under the preview, there still, never over the diff asked about.
---@param height integer
---@return integer
local function select_row(height)
  local preview = M.last_preview and M.last_preview.win
  local wanted = vim.o.lines - height - 3
  local under = preview and vim.api.nvim_win_is_valid(preview)
  if under then
    wanted = vim.api.nvim_win_get_position(preview)[1] + vim.api.nvim_win_get_height(preview) + 2
  end
  local taken, last = statusline_rows(), vim.o.lines - vim.o.cmdheight - height
  local function free(row)
    for r = row, row + height - 1 do
      if taken[r] then
        return false
      end
    end
    return true
  end
  for row = math.min(wanted, last), last do
    if free(row) then
      return row
    end
  end
  if under and wanted <= last then
    -- No room under the preview off a statusline (80x24): cover the chat's, whose "waiting for your answer" the
    -- question says itself, not the diff being asked about (moved up, it hid the changed lines).
    return wanted
  end
  for row = math.min(wanted, last) - 1, 0, -1 do
    if free(row) then
      return row
    end
  end
  return math.max(0, math.min(wanted, last))
end

---Neovim's own vim.ui.select in its place: inputlist() took every key, so a command typed while it was up (`:Ollie
---question`, `:OllieRestart`) ended it on a `q` or on <CR> with no number, a rejection never meant. This float
---answers to its own keys only (a number or the cursor's line, then <CR>; `q`, <Esc> or closing it dismisses); the
---command line and the other windows stay the user's.
---@param items any[]
---@param opts {prompt: string, format_item: fun(item: any): string, dismiss: string|nil} (dismiss: what `q` does)
---@param on_choice fun(item: any|nil)
local function float_select(items, opts, on_choice)
  local buf = vim.api.nvim_create_buf(false, true)
  local lines = {}
  for i, item in ipairs(items) do
    lines[i] = ("%d: %s"):format(i, opts.format_item(item))
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable, vim.bo[buf].bufhidden = false, "wipe"
  local title = " " .. one_line(vim.split(opts.prompt, "\n")[1]) .. " "
  -- Said on the float: a number only moves the cursor (Neovim's own picker said "Type number and <Enter>").
  local footer = " number or j/k, then <CR> · q: " .. (opts.dismiss or "dismiss") .. " "
  local width = math.min(math.max(vim.fn.strdisplaywidth(title), vim.fn.strdisplaywidth(footer),
    unpack(vim.tbl_map(vim.fn.strdisplaywidth, lines))) + 2, vim.o.columns - 4)
  if vim.fn.strdisplaywidth(title) > width then
    -- Neovim cut it at the border, mid-path, with nothing to say so (an MCP server's command line).
    title = vim.fn.strcharpart(title, 0, width - 2) .. "… "
  end
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor", row = select_row(#lines + 2), col = math.floor((vim.o.columns - width) / 2),
    width = width, height = #lines, style = "minimal", border = "rounded", title = title, title_pos = "center",
    footer = footer, footer_pos = "center",
  })
  vim.wo[win].cursorline = true  -- the answer <CR> picks is seen ("minimal" turns the cursor line off)
  vim.w[win].ollie_question, vim.w[win].ollie_focus = true, true -- (follow_to_tab moves it: its keys use window 0)
  local done = false
  local function finish(item)
    if not done then
      done = true
      for _, shown in ipairs(vim.fn.win_findbuf(buf)) do
        pcall(vim.api.nvim_win_close, shown, true)
      end
      on_choice(item)
    end
  end
  local function map(key, fn) vim.keymap.set("n", key, fn, { buffer = buf, nowait = true }) end
  map("<CR>", function() finish(items[vim.api.nvim_win_get_cursor(0)[1]]) end)
  map("q", function() finish(nil) end)
  map("<Esc>", function() finish(nil) end)
  for i = 1, math.min(#items, 9) do
    map(tostring(i), function() vim.api.nvim_win_set_cursor(0, { i, 0 }) end)
  end
  -- The question's preview scrolls from here (the picker keeps the focus): what did not fit is read before answering.
  for key, code in pairs({ ["<C-d>"] = "\4", ["<C-u>"] = "\21" }) do
    map(key, function()
      local preview = M.last_preview and M.last_preview.win
      if preview and vim.api.nvim_win_is_valid(preview) then
        vim.api.nvim_win_call(preview, function() vim.cmd("normal! " .. code) end)
      end
    end)
  end
  -- Closed another way (`:q`, a question taken away): dismissed. (Not when it moved to another tab: still shown.)
  vim.api.nvim_create_autocmd("BufWinLeave", { buffer = buf, once = true,
    callback = function() vim.schedule(function() finish(nil) end) end })
end

---Put a question to the user: `lines` in a float at once, then `pick(q, reply)` (a vim.ui.select) once they stop
---typing; `reply(result)` answers the daemon once, and nothing after the question was withdrawn.
---@param spec {session: string|nil, title: string, request: any, lines: string[], has_diff: boolean}
---@param answer ollie.Answer
---@param pick fun(q: ollie.Question, reply: fun(result: any))
local function pose(spec, answer, pick)
  local wins = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    wins[win] = true
  end
  local close = show_preview(spec.lines, spec.has_diff)
  ---@type ollie.Question
  local q = { session = spec.session, title = spec.title, done = false, wins = wins, close = close,
    request = spec.request }
  q.select = (debug.getinfo(vim.ui.select, "S").source or ""):find("vim/ui%.lua$") and float_select or vim.ui.select
  table.insert(M.waiting, q)
  pcall(vim.cmd.redrawstatus, { bang = true }) -- a redraw only: never an error where the editor cannot draw now
  local function reply(result)
    if q.done then
      return -- withdrawn: the daemon no longer waits for this answer
    end
    forget(q)
    close()
    answer(result)
  end
  M.watch_keys()
  preview_title(not idle())
  when_idle(q, function()
    preview_title(false)
    -- Drawn before asking: the user's vim.ui.select may block the screen until answered.
    vim.cmd("redraw")
    q.showing = true
    pick(q, reply)
  end)
end

---Answer an `ollie/permission` request: show the step and its diff, ask with vim.ui.select (and
---vim.ui.input for feedback), then `answer({outcome, feedback?})`. A dismissed question is a rejection.
---@param params table
---@param answer ollie.Answer
function M.ask(params, answer)
  local lines, has_diff = M.preview_lines(params)
  local title = one_line((params.step or {}).title)
  local options = params.options or {}
  if #options == 0 then
    options = {
      { id = "allow_once", name = "Allow once" }, { id = "allow_always", name = "Allow always" },
      { id = "reject", name = "Reject" }, { id = "reject_with_feedback", name = "Reject with feedback" },
    }
  end
  local target = M.network_target(params.step or {})
  if target then
    -- The daemon's option ids, worded for a connection: "always" is kept for later sessions too.
    local names = { allow_always = "Always allow", reject = "Deny", reject_with_feedback = "Deny with feedback" }
    options = vim.tbl_map(function(o)
      return { id = o.id, name = names[o.id] or o.name }
    end, options)
  end
  local spec = { session = params.session, title = title, request = params.requestId, lines = lines,
    has_diff = has_diff }
  pose(spec, answer, function(q, reply)
    q.select(options, {
      prompt = target and ("Allow network access to " .. target .. "?") or ("ollie asks to: " .. title),
      kind = "ollie_permission",
      dismiss = target and "deny" or "reject", -- (a step's question dismissed is rejected: "dismiss" read as "later")
      format_item = function(o)
        if o.id == "allow_always" and params.always then
          return o.name .. " (" .. one_line(params.always) .. ")"
        end
        return o.name
      end,
    }, function(choice)
      q.showing = false
      if not choice then
        reply({ outcome = "reject" })
      elseif choice.id == "reject_with_feedback" and not q.done then
        q.typing = "Tell the model why (or what to do instead): "
        vim.ui.input({ prompt = q.typing }, function(text)
          q.typing = nil
          -- A cancelled input is a plain rejection: there is no feedback to give.
          reply(text and { outcome = "reject_with_feedback", feedback = text } or { outcome = "reject" })
        end)
      else
        reply({ outcome = choice.id })
      end
    end)
  end)
end

---Answer the daemon's `window/showMessageRequest` (a switch to an agent without a sandbox; a step to run outside it
---comes as `ollie/permission`) as an `ollie/permission` question: the float at once, its buttons once the user stops
---typing. Neovim's own handler put up inputlist() at once, which took the keys being typed: a `1` and <CR> typed
---into a buffer answered it, unseen. The answer: the button picked, or null (dismissed).
---@param params table
---@param answer ollie.Answer
function M.ask_message(params, answer)
  local message = tostring(params.message or "")
  local lines = vim.tbl_map(one_line, vim.split(message, "\n", { plain = true }))
  local actions = vim.tbl_filter(function(a) return type(a) == "table" and type(a.title) == "string" end,
    type(params.actions) == "table" and params.actions or {})
  -- Its title (a withdrawn question's note): what it asks, `switch to agent NAME: ...`.
  local title = vim.trim(one_line(message):gsub("^ollie %(session [^)]*%) asks to ", ""):gsub("%s+", " "))
  local spec = { session = message:match("^ollie %(session ([^)%s]+)%)"), title = title, lines = lines,
    has_diff = false }
  pose(spec, answer, function(q, reply)
    q.select(actions, {
      prompt = table.concat(lines, "\n"),
      kind = "ollie_permission",
      format_item = function(a) return one_line(a.title) end,
    }, function(choice)
      q.showing = false
      reply(choice)
    end)
  end)
end

---Set the session's approval mode (`ollie/setApproval`); no mode: pick one, the current one marked.
---@param mode string|nil
function M.set_approval(mode)
  if mode and mode ~= "" then
    if not vim.tbl_contains(M.MODES, mode) then
      requests.notify("approval mode must be one of " .. table.concat(M.MODES, ", "), vim.log.levels.ERROR)
      return
    end
    requests.call("ollie/setApproval", { approval = mode }, function()
      requests.notify("approval: " .. mode .. " (" .. MODE_HELP[mode] .. ")")
    end)
    return
  end
  requests.call("ollie/state", {}, function(state)
    vim.ui.select(M.MODES, {
      prompt = "ollie: approval mode",
      format_item = function(m)
        return m .. " — " .. MODE_HELP[m] .. (m == state.approval and " (current)" or "")
      end,
    }, function(choice)
      if choice then
        M.set_approval(choice)
      end
    end)
  end)
end

---Completion for :OllieApproval.
---@param lead string
---@return string[]
function M.complete(lead)
  return vim.tbl_filter(function(m) return vim.startswith(m, lead) end, M.MODES)
end

return M
