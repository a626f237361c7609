-- Queued prompts (and the input's draft, typed and not sent) kept across a quit or a crash: the daemon Neovim
-- started ends with the editor, and its queue with it. Each session's prompts not run yet are written to one JSON
-- file under stdpath("state"), and queued again in the next editor's daemon when that session is shown (pending.lua's
-- restore_queue), held until the next prompt. A Restart forgets those its daemon held (init.lua puts them back in
-- the input); the file is every Neovim's of the user, so another one's stay.
local ondisk = require("ollie.ondisk")

local M = {}

-- The sessions whose prompts this editor's daemon was given (since its last Restart).
local mine = {}

-- The sessions whose prompts are kept: the oldest go first (as VS Code's SAVED_SESSIONS).
local SAVED_SESSIONS = 8
-- The state dir is another program's to write too: what is read back there is a regular file (never a FIFO, on
-- which a read waits for good, nor a link) to a bound: an image's, the base64 of the biggest file a context reads
-- (context.lua's MAX_FILE_BYTES); the queues' file, 8 sessions of prompts (their images are files of their own).
local MAX_IMAGE_DATA = math.ceil(16 * 1024 * 1024 / 3) * 4
local MAX_QUEUES = 64 * 1024 * 1024

---@class ollie.SavedPrompt
---@field text string
---@field context table[]|nil the prompt's contexts as `ollie/queue` takes them
---@field labels string[]
---@field images table[]|nil its images: `{path}` as `ollie/queue` takes them, or the bytes read here kept in a file
---of their own `{file, name}` (`M.images` reads them back)

---@class ollie.SavedQueue
---@field session string
---@field prompts ollie.SavedPrompt[]
---@field draft string|nil what the chat's input holds, not sent (saved as it is typed: a crash keeps it too)
---@field workspace string|nil a draft's session had no turn (no sessions list shows it): the directory it was typed in
---@field pid integer|nil the Neovim that typed a draft
---@field quit boolean|nil the Neovim that kept it quit (M.quitting); unmarked, it crashed or was killed

---The file the queues are kept in.
---@return string
function M.path()
  return vim.fn.stdpath("state") .. "/ollie/queued.json"
end

---Where the bytes of saved images are kept, a file each (named by their hash): the queue's file, rewritten whole at
---each change, names them only (it held each screenshot's base64 whole).
---@return string
local function images_dir()
  return vim.fs.dirname(M.path()) .. "/queued-images"
end

---Whether the images' dir is one (not a link: what is written or swept there would be where it points).
---@return boolean
local function images_dir_ours()
  local st = vim.uv.fs_lstat(images_dir())
  return st ~= nil and st.type == "directory"
end

---An image as saved: bytes read here go to a file of their own (none written: kept inline, as before).
---@param i table
---@return table
local function stored(i)
  if not i.data then
    return i
  end
  local file = vim.fn.sha256(i.data)
  local path = images_dir() .. "/" .. file
  if not vim.uv.fs_lstat(path) then
    vim.fn.mkdir(images_dir(), "p")
    if not images_dir_ours() or not pcall(vim.fn.writefile, { i.data }, path, "b") then
      return i
    end
  end
  return { file = file, name = i.name }
end

---A saved prompt's images as `ollie/queue` takes them: a stored one's bytes read back (a file gone is sent empty:
---the daemon refuses the prompt, and the chat says so).
---@param images table[]|nil
---@return table[]|nil
function M.images(images)
  return images and vim.tbl_map(function(i)
    if not i.file then
      return i
    end
    local data = ondisk.read_plain(images_dir() .. "/" .. i.file, MAX_IMAGE_DATA)
    return { data = data and #data <= MAX_IMAGE_DATA and data or "", name = i.name }
  end, images)
end

local told_broken = false

---The saved images of the shape written (`{path}`, `{file, name?}` or an earlier build's `{data, name?}`), nil for
---none: the daemon checks each again as it is queued. A `file` is a name `stored` gave, never a path.
---@param images any
---@return table[]|nil
local function valid_images(images)
  local valid = {}
  for _, i in ipairs(type(images) == "table" and images or {}) do
    i = type(i) == "table" and i or {}
    local file = type(i.file) == "string" and i.file:match("^%x+$") and i.file or nil
    if #vim.tbl_filter(function(v) return type(v) == "string" end, { i.path, i.data, file }) == 1 then
      table.insert(valid, { path = i.path, data = i.data, file = file,
        name = type(i.name) == "string" and i.name or nil })
    end
  end
  return #valid > 0 and valid or nil
end

---The prompts in a saved entry that have the shape written (a hand-edited or older file may hold anything).
---@param prompts any
---@return ollie.SavedPrompt[]
local function valid_prompts(prompts)
  local valid = {}
  for _, p in ipairs(type(prompts) == "table" and prompts or {}) do
    if type(p) == "table" and type(p.text) == "string" then
      local labels = vim.tbl_filter(function(l) return type(l) == "string" end,
        type(p.labels) == "table" and p.labels or {})
      table.insert(valid, { text = p.text, context = type(p.context) == "table" and p.context or nil, labels = labels,
        images = valid_images(p.images) })
    end
  end
  return valid
end

---The saved queues, oldest first; a file that is missing is none, a broken one is none too (said once).
---@return ollie.SavedQueue[]
function M.read()
  local path = M.path()
  if not vim.uv.fs_lstat(path) then
    return {}
  end
  local data = ondisk.read_plain(path, MAX_QUEUES)
  local ok, decoded = pcall(vim.json.decode, data and #data <= MAX_QUEUES and data or "")
  if not ok or type(decoded) ~= "table" then
    if not told_broken then
      told_broken = true
      vim.notify(("ollie: the saved queued prompts in %s could not be read, so they are ignored"):format(path),
        vim.log.levels.WARN)
    end
    return {}
  end
  local queues = {}
  for _, entry in ipairs(decoded) do
    if type(entry) == "table" and type(entry.session) == "string" then
      local prompts, draft = valid_prompts(entry.prompts), type(entry.draft) == "string" and entry.draft or nil
      if #prompts > 0 or draft then
        local pid = draft and type(entry.pid) == "number" and entry.pid or nil
        table.insert(queues, { session = entry.session, prompts = prompts, draft = draft,
          workspace = pid and type(entry.workspace) == "string" and entry.workspace or nil, pid = pid,
          quit = entry.quit == true or nil })
      end
    end
  end
  return queues
end

---Write the queues (the newest SAVED_SESSIONS) whole: to a temp file first, renamed over the old one, so a crash
---mid-write leaves the old file or the new, never half of one.
---@param queues ollie.SavedQueue[]
local function write(queues)
  local path = M.path()
  while #queues > SAVED_SESSIONS do
    table.remove(queues, 1)
  end
  vim.fn.mkdir(vim.fs.dirname(path), "p")
  local tmp = ("%s.%d.tmp"):format(path, vim.uv.os_getpid())
  vim.uv.fs_unlink(tmp) -- a name known ahead: a link planted there is no file to write through
  local ok = pcall(vim.fn.writefile, { vim.json.encode(queues) }, tmp)
  if not ok or not vim.uv.fs_rename(tmp, path) then
    pcall(vim.uv.fs_unlink, tmp)
    vim.notify("ollie: could not save the queued prompts to " .. path, vim.log.levels.WARN)
    return
  end
  -- The images no saved prompt names go (another Neovim's are in the file too).
  local kept = {}
  for _, q in ipairs(queues) do
    for _, p in ipairs(q.prompts) do
      for _, i in ipairs(p.images or {}) do
        kept[i.file or ""] = true
      end
    end
  end
  for name, kind in images_dir_ours() and vim.fs.dir(images_dir()) or function() end do
    if not kept[name] and kind ~= "directory" then
      vim.uv.fs_unlink(images_dir() .. "/" .. name)
    end
  end
end

---Change one session's saved prompts with `fn(prompts) -> prompts` (nil: no change, nothing written), and its
---draft to `draft` ("": none; nil: kept, with its `fresh`); a session left with neither is dropped, one changed is the
---newest.
---@param session string
---@param fn fun(prompts: ollie.SavedPrompt[]): ollie.SavedPrompt[]|nil
---@param draft string|nil
---@param fresh {workspace: string, pid: integer}|nil the draft's session had no turn
local function update(session, fn, draft, fresh)
  local queues, prompts, kept = {}, {}, nil
  for _, q in ipairs(M.read()) do
    if q.session == session then
      prompts, kept = q.prompts, q.draft
      fresh = draft == nil and (q.workspace or q.pid) and { workspace = q.workspace, pid = q.pid } or fresh
    else
      table.insert(queues, q)
    end
  end
  prompts = fn(prompts)
  if not prompts then
    return
  end
  kept = draft == nil and kept or draft ~= "" and draft or nil
  if #prompts > 0 or kept then
    fresh = kept and fresh or {}
    table.insert(queues, { session = session, prompts = prompts, draft = kept, workspace = fresh.workspace,
      pid = fresh.pid })
  end
  write(queues)
end

---Keep what `session`'s input holds, not sent ("": nothing), for its chat to show again (M.take_draft); `workspace`:
---the session had no turn, so its draft goes to the next session shown there once this Neovim is gone.
---@param session string
---@param text string
---@param workspace string|nil
function M.keep_draft(session, text, workspace)
  update(session, function(prompts) return prompts end, text, { workspace = workspace, pid = vim.uv.os_getpid() })
end

---The draft an earlier Neovim kept for `session` (this one's is its input as typed: taken after an :OllieRestart, it
---came back twice, "not sent before the editor quit"), else the newest of a session with no turn typed in `workspace`
---by a Neovim gone (a crash, a quit before the first prompt: no sessions list shows that session); nil: none. Kept no
---more.
---@param session string
---@param workspace string
---@return string|nil draft
---@return string|nil ended how the Neovim that typed it ended ("the editor quit", "the editor crashed")
function M.take_draft(session, workspace)
  local found
  for _, q in ipairs(M.read()) do
    local orphan = q.workspace == workspace and q.pid ~= vim.uv.os_getpid() and vim.uv.kill(q.pid, 0) ~= 0
    local own = q.session == session and q.pid ~= vim.uv.os_getpid()
    found = q.draft and (own or orphan and not (found and found.session == session)) and q or found
  end
  if found then
    update(found.session, function(prompts) return prompts end, "")
    return found.draft, M.ended(found)
  end
end

---How the Neovim that kept `q` ended, as a note says it: a crash (or a kill) left it unmarked.
---@param q ollie.SavedQueue
---@return string
function M.ended(q)
  return q.quit and "the editor quit" or "the editor crashed"
end

---This Neovim quits: what it kept (its drafts, the prompts its daemon held) is marked so, for the next one to say.
function M.quitting()
  local queues, changed = M.read(), false
  for _, q in ipairs(queues) do
    if not q.quit and (q.pid == vim.uv.os_getpid() or mine[q.session]) then
      q.quit, changed = true, true
    end
  end
  if changed then
    write(queues)
  end
end

---Note that this editor's daemon has `session`'s saved prompts (queued again there): a Restart forgets them.
---@param session string
function M.claim(session)
  mine[session] = true
end

---Keep a prompt the daemon queued (until its turn starts).
---@param session string
---@param prompt ollie.SavedPrompt
function M.add(session, prompt)
  mine[session] = true
  prompt.images = prompt.images and vim.tbl_map(stored, prompt.images)
  update(session, function(prompts)
    table.insert(prompts, prompt)
    return prompts
  end)
end

---A queued prompt's turn started (its text as the `user` event says it): it is kept no more.
---@param session string
---@param text string
function M.take(session, text)
  update(session, function(prompts)
    for i, p in ipairs(prompts) do
      if p.text == text then
        table.remove(prompts, i)
        return prompts
      end
    end
  end)
end

---Forget a session's prompts (its queue is empty in the daemon), or (nil: a Restart) those of every session this
---editor's daemon held: another Neovim's were written over by an empty file.
---@param session string|nil
function M.forget(session)
  local sessions = session and { [session] = true } or mine
  if not session then
    mine = {}
  end
  for s in pairs(sessions) do
    update(s, function(prompts) return #prompts > 0 and {} or nil end)
  end
end

return M
