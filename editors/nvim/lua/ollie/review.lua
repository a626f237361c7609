-- Review of a turn's changes: the changed-files list (:OllieChanges), a before ↔ after diff per file with
-- undo per hunk or per file (ollie/review/undo), and :OllieRewind (ollie/rewind).
local render = require("ollie.render")
local requests = require("ollie.requests")
local turn_list = require("ollie.turns")
local shown_path = require("ollie.permission").shown_path
local confirm = require("ollie.pickers").confirm

local M = {}

---The keys of the changes list and the diff tab: `setup({ keymaps = { review = {...} } })` (config.lua).
---@return ollie.ReviewKeys
local function keys()
  return require("ollie.config").options.keymaps.review
end

---A buffer-local normal-mode key; a key set to false maps nothing.
local function map(buf, lhs, fn, desc)
  if lhs then
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
end

---"key what" hints for a winbar or header (the unmapped ones left out).
---@return string[]
local function hint_list(pairs_)
  local parts = {}
  for _, p in ipairs(pairs_) do
    if p[1] then
      table.insert(parts, p[1] .. " " .. p[2])
    end
  end
  return parts
end

local function hints(pairs_)
  return table.concat(hint_list(pairs_), " · ")
end

---@class ollie.ChangedFile
---@field path string relative to the session's cwd
---@field status "added"|"modified"|"deleted"
---@field binary boolean
---@field oldText string|nil
---@field newText string|nil
---@field added integer lines added (the daemon's count; a text too long to diff has it but no hunks)
---@field removed integer
---@field hunks {oldStart: integer, oldLines: integer, newStart: integer, newLines: integer, lines: string[]}[]
---@field undone boolean|nil the user undid it since: the daemon lists it no more, this list keeps it, so marked

---@class ollie.Review
---@field turn integer|nil
---@field cwd string
---@field files ollie.ChangedFile[]
---@field list_buf integer|nil
---@field session string|nil the session whose turn it is (the diff tab has no chat: undo must not ask its own)
---@field more integer how many more files the turn changed than `files` lists (ollie/changes lists its first ones)
M.current = { turn = nil, cwd = "", files = {}, list_buf = nil, session = nil, more = 0, after_bufs = {} }

local STATUS = { added = "A", modified = "M", deleted = "D" }

local function abs(path)
  if path:sub(1, 1) == "/" then
    return path
  end
  return vim.fs.joinpath(M.current.cwd, path)
end

local function find(path)
  for _, f in ipairs(M.current.files) do
    if f.path == path and not f.undone then
      return f
    end
  end
end

---How many files the turn still changes (those undone left out).
local function left()
  local n = M.current.more
  for _, f in ipairs(M.current.files) do
    n = n + (f.undone and 0 or 1)
  end
  return n
end

---Undo all of `path`'s changes. The turn's only changed file is asked about first, as a rewind is: that undoes all
---of the turn's changes (one file of several is undone at once).
---@param path string
local function undo_file(path)
  if left() == 1 and find(path) then
    -- On one line of the screen (80 columns): short words, and a long path's middle goes (Neovim's select wrapped
    -- "(<path>, the only file it changed)" mid-word).
    local asked = "Undo all of turn %d's changes (all in %s)?"
    local room = vim.o.columns - 1 - vim.fn.strdisplaywidth(string.format(asked, M.current.turn, ""))
    confirm(string.format(asked, M.current.turn, render.fit_middle(vim.fn.strtrans(path), math.max(room, 20))),
      "Undo all", function() M.undo(path, nil) end)
    return
  end
  M.undo(path, nil)
end

---One line of the list for a file: status, path, lines added and removed, hunks (or undone).
---@param f ollie.ChangedFile
---@return string
function M.file_line(f)
  -- The daemon's counts: a text too long to diff has no hunks, and its lines counted all the same.
  local what = f.undone and "undone" or f.binary and "binary"
    or string.format("+%d -%d, %d hunk%s", f.added or 0, f.removed or 0, #f.hunks, #f.hunks == 1 and "" or "s")
  -- A name may hold a newline (no buffer line can) or terminal escapes: drawn as Neovim draws controls (^[).
  return string.format("%s  %s  (%s)", STATUS[f.status] or "?", vim.fn.strtrans(f.path), what)
end

---Fetch a turn's changes (and the session's cwd) of `session` (default: the current tab's chat's), then `cb(res)`;
---`changed`: of the last turn up to it that changed files (`res.last`: the turn the daemon looked back from).
local function fetch(turn, cb, session, changed)
  session = session or requests.session()
  requests.call("ollie/state", { session = session }, function(state)
    requests.call("ollie/changes", { turn = turn, session = session, changed = changed }, function(res)
      M.current.turn, M.current.files, M.current.cwd = res.turn ~= vim.NIL and res.turn or nil, res.files or {},
        state.cwd or vim.fn.getcwd()
      M.current.more = type(res.more) == "number" and res.more > 0 and res.more or 0
      M.current.session = session
      cb(res)
    end)
  end)
end

local function list_lines()
  local c = M.current
  local k = keys()
  local count = left()
  -- Once the user has undone every file the list says so ("changed 0 files" read as if the turn had done nothing).
  local lines = {
    count == 0 and string.format("ollie: turn %d's changes are all undone   (%s)", c.turn,
      hints({ { k.refresh, "refresh" }, { k.close, "close" } }))
    or string.format("ollie: turn %d changed %d file%s   (%s)", c.turn, count, count == 1 and "" or "s",
      hints({ { k.open, "diff" }, { k.undo_file, "undo file" }, { k.refresh, "refresh" }, { k.close, "close" } })),
  }
  for _, f in ipairs(c.files) do
    table.insert(lines, M.file_line(f))
  end
  if c.more > 0 then -- past the daemon's bound (100 files, 4 MiB of text): counted, not listed
    table.insert(lines, string.format("… and %d more file%s, not listed", c.more, c.more == 1 and "" or "s"))
  end
  return lines
end

---The file of the list line under the cursor.
local function file_at_cursor()
  local f = M.current.files[vim.api.nvim_win_get_cursor(0)[1] - 1]
  if f and f.undone then
    requests.notify(vim.fn.strtrans(f.path) .. ": its changes in this turn are undone")
    return nil
  end
  return f
end

local function render_list()
  local buf = M.current.list_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, list_lines())
  vim.bo[buf].modifiable = false
end

local function list_buffer()
  local buf = M.current.list_buf
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "ollie://changes")
  vim.b[buf].ollie_sidebar = true -- its tab is labelled by her file or the chat, not by the list (tabline.lua)
  vim.bo[buf].filetype = "ollie-changes"
  vim.bo[buf].bufhidden = "hide"
  local k = keys()
  map(buf, k.open, function()
    local f = file_at_cursor()
    if f then
      M.open_diff(f.path)
    end
  end, "ollie: open the diff")
  map(buf, k.undo_file, function()
    local f = file_at_cursor()
    if f then
      undo_file(f.path)
    end
  end, "ollie: undo the file's changes")
  map(buf, k.refresh, function() M.changes(M.current.turn, M.current.session) end, "ollie: refresh")
  map(buf, k.close, "<cmd>close<cr>", "ollie: close")
  -- The names are the steps': Neovim's gx handed one to the system's opener (xdg-open), as the user.
  local chatwin = require("ollie.chatwin")
  vim.keymap.set({ "n", "x" }, "gx", chatwin.open_address, { buffer = buf, desc = "ollie: open address" })
  chatwin.guard_file_keys(buf, function()
    local f = file_at_cursor()
    if f then
      chatwin.open_named(abs(f.path))
    end
  end)
  M.current.list_buf = buf
  return buf
end

---Show the files turn `turn` of `session` (default: this tab's chat's) changed, in a list at the bottom. No turn
---given: the last turn that changed any, and when that is not the last turn, said so (a user asks what the agent
---changed; "turn 3 changed no files" stopped there).
---@param turn integer|nil
---@param session string|nil
function M.changes(turn, session)
  local function show(res)
    local c = M.current
    -- The daemon looked back (one request, however many turns only talked): `last`, the turn it started from.
    local last = type(res.last) == "number" and res.last or c.turn
    -- "No changes", not "changed no files": a turn passed over may have had its changes undone.
    local function none(from)
      return (from == last and ("turn " .. last .. " has") or ("turns " .. from .. " to " .. last .. " have"))
        .. " no changes"
    end
    if not c.turn or #c.files == 0 then
      requests.notify(not c.turn and "no turn yet" or none(turn or 1))
      return
    end
    if last ~= c.turn then
      requests.notify(none(c.turn + 1) .. string.format("; showing turn %d's changes", c.turn))
    end
    local buf = list_buffer()
    render_list()
    local win = vim.fn.bufwinid(buf)
    if win == -1 then
      vim.cmd("botright " .. math.min(#M.current.files + 1, 12) .. "split")
      vim.api.nvim_win_set_buf(0, buf)
      -- A diff tab's tabline takes its row from the code above, never the list's line of key hints.
      vim.wo[0][0].winfixheight = true
    else
      vim.api.nvim_set_current_win(win)
    end
    vim.api.nvim_win_set_cursor(0, { 2, 0 })
  end
  fetch(turn, show, session, not turn or nil)
end

local function split_text(text)
  if type(text) ~= "string" then
    return {}
  end
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

---A read-only scratch buffer with `lines`.
local function scratch(name, lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  -- Named with a path's controls escaped: `:mksession` writes a newline of a name as `\` and a line break, and the
  -- session file, sourced, ran the rest of the name (`lua=os.execute(...)`) as a command; a U+202E reordered the tab.
  pcall(vim.api.nvim_buf_set_name, buf, shown_path(name))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  if filetype and filetype ~= "" then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

---The index (0-based, as ollie/changes lists them) of the hunk at `line` of the before or after side.
---@param f ollie.ChangedFile
---@param line integer 1-based
---@param before boolean the cursor is in the "before" window
---@return integer|nil
function M.hunk_at(f, line, before)
  for i, h in ipairs(f.hunks or {}) do
    local start, count = h.newStart, h.newLines
    if before then
      start, count = h.oldStart, h.oldLines
    end
    -- A hunk that only removes (or only adds) lines sits between two lines of the other side.
    local last = count == 0 and start + 1 or start + count - 1
    if line >= start and line <= last then
      return i - 1
    end
  end
  return nil
end

local function close_tab()
  if vim.fn.tabpagenr("$") > 1 then
    vim.cmd("tabclose")
  end
end

local function diff_maps(buf, path, before)
  local k = keys()
  map(buf, k.undo_hunk, function()
    local f = find(path)
    local hunk = f and M.hunk_at(f, vim.api.nvim_win_get_cursor(0)[1], before)
    if not hunk then
      requests.notify("no change of turn " .. tostring(M.current.turn) .. " under the cursor", vim.log.levels.WARN)
      return
    end
    M.undo(path, hunk)
  end, "ollie: undo this hunk")
  map(buf, k.keep_hunk, function()
    pcall(vim.cmd.normal, { "]c", bang = true })
  end, "ollie: keep this hunk, go to the next")
  map(buf, k.undo_file, function() undo_file(path) end, "ollie: undo the file's changes")
  map(buf, k.close, close_tab, "ollie: close the diff")
end

-- Window options that are the window's own, not how it shows its text: never copied to the diff's other side.
local OWN_OPTIONS = { winbar = true, scroll = true, previewwindow = true, winfixbuf = true, winfixheight = true,
  winfixwidth = true }

---Give window `to` the window-local options of `from` (folds, fill characters, numbers, conceal), so that both sides
---of a diff show and fold their text the same way, as `:diffsplit` from the file's window does. Before, the "before"
---side, a new buffer, took the options the tab's first window had copied from the chat window the diff was opened
---from (its transparent foldtext and fold fill characters), the file's side its own: their folds looked different.
---@param from integer
---@param to integer
local function same_options(from, to)
  for name, info in pairs(vim.api.nvim_get_all_options_info()) do
    if info.scope == "win" and not OWN_OPTIONS[name] then
      vim.api.nvim_set_option_value(name, vim.wo[from][name], { win = to, scope = "local" })
    end
  end
end

---The key of `path`'s "after turn" side in `M.current.after_bufs`: one per session, turn and file.
local function after_key(path)
  return string.format("%s\0%s\0%s", M.current.session, M.current.turn, path)
end

---Whether `path` is still as the turn left it (`f.newText`): its loaded buffer, unsaved edits too, else the disk.
---@param path string
---@param f ollie.ChangedFile
local function as_left(path, f)
  if path:find("\n") then
    return false -- its buffer's name would go into a `:mksession` file as a command too (see scratch): its text shown
  end
  local want = split_text(f.newText)
  local buf = vim.fn.bufnr(abs(path))
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), want)
  end
  -- Looked at and read in one open: a step may have made it a FIFO (a read would hold Neovim) or a link since.
  local lines = require("ollie.context").read_lines(abs(path), abs(path))
  return lines ~= nil and vim.deep_equal(lines, want)
end

---Open the diff of one changed file in a new tab: the text before the turn (left) ↔ the file now (right), or, when
---the file moved on since (a later turn or the user edited it), the text the turn left: the turn's change alone,
---its hunks where the list counts them (the file now showed a later turn's edit as this turn's).
---@param path string as ollie/changes lists it
function M.open_diff(path)
  local f, shown = find(path), shown_path(path)
  if not f then
    return
  end
  local why = f.status ~= "deleted" and requests.unopenable(abs(path))
  if why then
    -- An added link (listed, its target never read) to a FIFO or a device would hold the editor for good, one to a
    -- key show it and hand it to the daemon as the file's text.
    requests.notify(shown .. " " .. why .. ": no diff", vim.log.levels.WARN)
    return
  end
  if f.binary then
    requests.notify(shown .. " is binary: no diff" .. (keys().undo_file and (" (" .. keys().undo_file
      .. " undoes it)") or ""))
    return
  end
  -- Its session's title after the name (the "before" side's, the other's keeps its key hints): a fork has its
  -- source's turns, and their review tabs were named alike.
  local chat = M.current.session and require("ollie.chat").all_by_session(M.current.session)[1]
  local of = chat and chat.title ~= "" and (" — " .. shown_path(chat.title)) or ""
  local origin = vim.t.ollie_review_of or vim.api.nvim_get_current_tabpage()
  vim.cmd("tabnew")
  vim.t.ollie_review_of = origin -- the chat of this tab is the reviewed one (chat.get)
  local after_win = vim.api.nvim_get_current_win()
  local after_buf
  if f.status == "deleted" then
    after_buf = scratch("ollie://deleted/" .. path, {}, nil)
    vim.b[after_buf].ollie_label = "ollie: " .. shown .. " (deleted)"
    vim.api.nvim_win_set_buf(after_win, after_buf)
  elseif as_left(path, f) then
    vim.cmd.edit(vim.fn.fnameescape(abs(path)))
    after_buf = vim.api.nvim_get_current_buf()
  else
    after_buf = scratch(string.format("ollie://turn-%d/after/%s", M.current.turn, path), split_text(f.newText), nil)
    vim.b[after_buf].ollie_label = string.format("ollie: %s after turn %d%s", shown, M.current.turn, of)
    vim.api.nvim_win_set_buf(after_win, after_buf)
    M.current.after_bufs[after_key(path)] = after_buf -- an undo refreshes it (the file's buffer the editor reloads)
  end
  local ft = vim.bo[after_buf].filetype ~= "" and vim.bo[after_buf].filetype or vim.filetype.match({ filename = path })
  if ft and vim.bo[after_buf].filetype == "" then
    vim.bo[after_buf].filetype = ft
  end
  vim.cmd("leftabove vsplit")
  local before_win = vim.api.nvim_get_current_win()
  local name = string.format("ollie://turn-%d/before/%s", M.current.turn, path)
  local before_buf = scratch(name, split_text(f.oldText), ft)
  vim.b[before_buf].ollie_label = string.format("ollie: %s before turn %d%s", shown, M.current.turn, of)
  vim.api.nvim_win_set_buf(before_win, before_buf)
  same_options(after_win, before_win)
  local k = keys()
  local chatwin = require("ollie.chatwin")
  chatwin.set_bar(before_win, "winbar", { label = string.format("before turn %d: %s", M.current.turn, shown), tail = of,
    hints = {} })
  -- A narrow window drops key hints (the last first), never the file's name.
  local side = M.current.after_bufs[after_key(path)] == after_buf
    and string.format("after turn %d: ", M.current.turn) or "now: "
  chatwin.set_bar(after_win, "winbar", { label = side .. shown, sep = " · ", paren = true, hints = hint_list({
    { k.undo_hunk, "undo hunk" }, { k.keep_hunk, "keep" }, { k.undo_file, "undo file" }, { k.close, "close" } }) })
  for _, w in ipairs({ before_win, after_win }) do
    vim.api.nvim_win_call(w, function() vim.cmd("diffthis") end)
  end
  diff_maps(before_buf, path, true)
  diff_maps(after_buf, path, false)
  vim.api.nvim_set_current_win(after_win)
  local first = f.hunks[1]
  if first then
    -- Both sides on the first hunk: 'cursorbind' follows the cursor's moves, not one set from here (the "before"
    -- side stayed on its first line).
    pcall(vim.api.nvim_win_set_cursor, before_win, { math.max(1, first.oldStart), 0 })
    pcall(vim.api.nvim_win_set_cursor, after_win, { math.max(1, first.newStart), 0 })
  end
end

---One diff of a step in a new tab: the file before the step (left) ↔ after it (right), read-only.
---@param title string the step's
---@param d {path: string, oldText: string|nil, newText: string|nil}
local function show_step_diff(title, d)
  if type(d.oldText) ~= "string" and type(d.newText) ~= "string" then -- (both null: binary) two empty sides showed
    return requests.notify(d.path .. " is binary: no diff")
  end
  local origin = vim.t.ollie_review_of or vim.api.nvim_get_current_tabpage()
  vim.cmd("tabnew")
  vim.t.ollie_review_of = origin -- the chat of this tab is the one the step is in (chat.get)
  local ft, k = vim.filetype.match({ filename = d.path }), keys()
  for _, side in ipairs({ { "before", d.oldText }, { "after", d.newText } }) do
    if side[1] == "after" then
      vim.cmd("rightbelow vsplit")
    end
    local buf = scratch(("ollie://step/%s/%s"):format(side[1], d.path), split_text(side[2]), ft)
    vim.api.nvim_win_set_buf(0, buf)
    map(buf, k.close, close_tab, "ollie: close the diff")
    local label = ("%s %s: %s"):format(side[1], title, shown_path(d.path))
    vim.b[buf].ollie_label = "ollie: " .. label:gsub("%c", " ") -- its tab's (tabline.lua): Neovim's was "o//s/a/x.py"
    require("ollie.chatwin").set_bar(0, "winbar", { label = label,
      hints = side[1] == "after" and hint_list({ { k.close, "close" } }) or {} })
    vim.cmd("diffthis")
  end
end

---Open a step's own diff from the chat (a file of several picked first): its live `tool` event's diffs, or, resumed
---(the history keeps none), those `ollie/changes` read from the checkpoints around its call, else (an older log, past
---the bound) the turn's change of each file it changed that no later step of the turn changed, as live it went there.
---@param step ollie.Step
---@param session string|nil
function M.step_diff(step, session)
  local function open(diffs)
    if #diffs == 0 then
      return requests.notify(step.title .. ": no change to show")
    elseif #diffs == 1 then
      return show_step_diff(step.title, diffs[1])
    end
    vim.ui.select(diffs, { prompt = "Diff of which file?", format_item = function(d) return shown_path(d.path) end },
      function(d) return d and show_step_diff(step.title, d) end)
  end
  if step.diffs or not step.turn then
    return open(step.diffs or {})
  end
  requests.call("ollie/changes", { turn = step.turn, session = session }, function(res)
    local own, names = type(res.steps) == "table" and res.steps[step.call], {}
    for _, path in ipairs(step.files or {}) do
      names[path] = true
    end
    for i = #step.peers, 1, -1 do
      if step.peers[i] == step then
        break
      end
      for _, path in ipairs(own and {} or step.peers[i].files or {}) do
        names[path] = nil -- a later step changed it too: the turn's diff of it is that one's
      end
    end
    open(vim.tbl_filter(function(d) return names[d.path] or (own and not step.files) end, own or res.files or {}))
  end)
end

---Bring a buffer of `path` up to date after an undo: save it when the undo went to the (unmodified) buffer,
---reload it from disk otherwise.
local function sync_buffer(path, in_editor, was_modified)
  local buf = vim.fn.bufnr(abs(path))
  if buf == -1 or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  if in_editor then
    if not was_modified then
      -- The undo went to the buffer (workspace/applyEdit); the user had nothing unsaved, so the disk follows.
      vim.api.nvim_buf_call(buf, function() vim.cmd("silent noautocmd write") end)
    end
  else
    requests.checktime(buf)
  end
end

---The "after turn" side of `path`'s diff, if one shows, now holds what is left of the turn's change (`f.newText`).
local function refresh_after(path, f)
  local buf = M.current.after_bufs[after_key(path)]
  if not (buf and f and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, split_text(f.newText))
  vim.bo[buf].modifiable = false
end

---Undo hunk `hunk` (0-based; nil: the whole file) of the current turn's change to `path`.
---@param path string
---@param hunk integer|nil
---@param on_done fun(result: table|nil)|nil
function M.undo(path, hunk, on_done)
  local buf = vim.fn.bufnr(abs(path))
  local was_modified = buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified
  local params = { path = path, hunk = hunk, turn = M.current.turn, session = M.current.session }
  requests.call("ollie/review/undo", params, function(res)
    sync_buffer(path, res.inEditor, was_modified)
    local what = hunk and string.format("hunk %d of %s", hunk + 1, path) or ("all changes to " .. path)
    -- The undo reaches the disk by the buffer's save, with what she had not saved: said (it was saved silently).
    if was_modified and res.inEditor and not vim.bo[buf].modified then
      what = what .. " (saved, with your unsaved changes)"
    end
    -- The other hunks are renumbered: fetch the turn's changes again.
    local was, before = find(path), M.current.files
    fetch(M.current.turn, function()
      -- A file the turn no longer changes stays, marked undone (as VS Code's list has it): gone, it read as if the
      -- turn had never changed it.
      for _, f in ipairs(before) do
        if not find(f.path) then
          f.undone = true
          table.insert(M.current.files, f)
        end
      end
      table.sort(M.current.files, function(a, b) return a.path < b.path end)
      render_list()
      refresh_after(path, find(path) or was and { newText = was.oldText })
      pcall(vim.cmd, "diffupdate")
      local chats = require("ollie.chat")
      for _, chat in ipairs(M.current.session and chats.all_by_session(M.current.session) or { chats.get() }) do
        chat.transcript:changes_undone(M.current.turn, left())
      end
      requests.notify("undone: " .. what)
      if on_done then
        on_done(res)
      end
    end, M.current.session)
  end, function(err)
    -- A stale undo (the file changed since the turn) is refused, and the daemon's message says why:
    -- "stale: a.txt: the file was edited since ...; undo refused".
    local stale = err.code == -32003
    requests.notify((stale and "" or "undo failed: ") .. requests.err_text(err), vim.log.levels.WARN)
    if on_done then
      on_done(nil)
    end
  end)
end

---The changes list, when it shows, goes: the turns it counted are gone or renumbered after a rewind.
local function close_list()
  local buf = M.current.list_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if #vim.api.nvim_tabpage_list_wins(vim.api.nvim_win_get_tabpage(win)) > 1 then
      vim.api.nvim_win_close(win, true)
    end
  end
end

---The open buffers the daemon could not put back (the user typed in them since): `path (why)` each.
---@param buffers table[]|nil the rewind's `buffers`: {path, status, reason?}
local function kept_buffers(buffers)
  local names = {}
  for _, b in ipairs(buffers or {}) do
    if b.status ~= "reverted" then
      table.insert(names, string.format("%s (%s)", vim.fn.fnamemodify(b.path, ":."), b.reason or b.status))
    end
  end
  return names
end

local function do_rewind(params)
  requests.call("ollie/rewind", params, function(res)
    requests.checktime()
    close_list()
    local n = #(res.files or {})
    -- Build output (a test run's __pycache__) is put back too, but said apart: the change list never showed it.
    -- Named as the engine's /rewind names it: the first 3, then how many more. Last: a notice wider than the
    -- command line is cut at its end (requests.notify), never at the counts.
    local built = res.buildOutput or {}
    local named = table.concat(vim.list_slice(built, 1, 3), ", ")
      .. (#built > 3 and (" and " .. (#built - 3) .. " more") or "")
    local kept = kept_buffers(res.buffers)
    -- In turns, as the engine's /rewind says it ("4 messages left" told a user nothing): an undo's turns back are
    -- `turn` to `turns`, a rewind keeps `turns`.
    local turns = res.turns or 0
    local back = turns > res.turn and ("turns " .. res.turn .. "–" .. turns) or ("turn " .. tostring(res.turn))
    local turns_kept = (turns > 0 and tostring(turns) or "no") .. " turn" .. (turns == 1 and "" or "s") .. " kept, "
    requests.notify(string.format("%s (%s%d file%s restored%s)",
      params.undo and ("rewind undone: " .. back .. " back") or ("rewound to before turn " .. tostring(res.turn)),
      params.undo and "" or turns_kept, n, n == 1 and "" or "s",
      #built > 0 and (", and build output (" .. named .. ")") or ""))
    -- The chat says what the rewind left as it was (its autocmd below shows `note` under the conversation).
    -- An undo puts the cut turns' edits back in the buffers the rewind reverted, but not in one typed in since.
    res.note = #kept > 0 and ((params.undo and "the undo left these buffers as they are, without the agent's edits: "
      or "the rewind left these buffers as they are (edited since): ") .. table.concat(kept, ", ")) or nil
    -- The chat of the session re-renders its history on this event.
    vim.api.nvim_exec_autocmds("User", { pattern = "OllieRewind",
      data = vim.tbl_extend("force", res, { session = params.session or requests.session() }) })
  end)
end

---Rewind to before turn `n` after confirmation. The undo is said in the choice: the question and each choice fit
---80 columns (Neovim's own select wrapped a longer line mid-sentence, the rest starting with a space).
local function rewind_to(n)
  confirm(string.format("Rewind to before turn %d? Its file changes and its messages go.", n),
    "Rewind (:OllieRewind undo puts them back until the next turn)", function() do_rewind({ turn = n }) end)
end

---:OllieRewind: pick a turn (or `n`, or `undo`), confirm, rewind files and conversation to before it.
---@param arg string|nil
function M.rewind(arg)
  if arg == "undo" then
    confirm("Undo the last rewind (files and conversation back)?", "Undo rewind", function()
      do_rewind({ undo = true })
    end)
    return
  end
  if tonumber(arg) then
    rewind_to(tonumber(arg) --[[@as integer]])
    return
  end
  requests.call("ollie/changes", {}, function(last)
    local session = requests.session() -- the one asked (after a switch in flight: the one switched to)
    if last.turn == nil or last.turn == vim.NIL then
      requests.notify("no turn to rewind yet")
      return
    end
    -- The prompts of the history (ollie/context) and, from a tab without a chat, which session that is (when its
    -- turns started is kept by session); then the turns a page of 10 at a time, newest first, to the first.
    local pending = session and 1 or 2
    local res, changed, plans
    local page
    local function read()
      pending = pending - 1
      if pending == 0 then
        page(last.turn)
      end
    end
    ---The turns `top` down to 10 before it: the files of each its mark says changed some (ollie/changes: a diff
    ---each), then the pick, its last item the older turns' page.
    page = function(top)
      local turns, waiting = {}, 1
      for t = top, math.max(1, top - 9), -1 do
        table.insert(turns, { turn = t, files = {}, plan = plans[t] })
      end
      local function one_done()
        waiting = waiting - 1
        if waiting > 0 then
          return
        end
        turn_list.attach_prompts(turns, last.turn, turn_list.prompts(res and res.messages), session)
        local older = top - 10
        if older >= 1 then
          table.insert(turns, { older = older })
        end
        vim.ui.select(turns, {
          prompt = "ollie: rewind to before which turn?",
          kind = "ollie_turn",
          format_item = function(item)
            return item.older and string.format("older turns (%d–1)…", item.older) or turn_list.label(item)
          end,
        }, function(choice)
          if choice and choice.older then
            page(choice.older)
          elseif choice then
            rewind_to(choice.turn)
          end
        end)
      end
      for _, item in ipairs(turns) do
        if not res or changed[item.turn] then -- (no history read: each asked)
          waiting = waiting + 1
          item.unknown = true -- until its diff answers: one that fails is never "no file changes"
          requests.call("ollie/changes", { turn = item.turn }, function(r)
            item.files, item.more, item.unknown = r.files or {}, type(r.more) == "number" and r.more or 0, nil
            one_done()
          end, one_done)
        end
      end
      one_done()
    end
    if not session then
      requests.call("ollie/state", {}, function(state)
        session = state.session
        read()
      end, read)
    end
    require("ollie.history").read_context(session, function(_, context_res)
      res, changed, plans = context_res, {}, {}
      for _, m in ipairs(res and res.messages or {}) do
        local mark = type(m) == "table" and m.turnChanges
        -- (a turn whose count is not known, its end's diff failed, may have changed files: asked too)
        if type(mark) == "table" and type(mark.turn) == "number" then
          changed[mark.turn] = (tonumber(mark.files) or 0) > 0 or mark.unknown == true
          plans[mark.turn] = mark.plan == true -- what the rewind puts back too
        end
      end
      read()
    end)
  end)
end

return M

