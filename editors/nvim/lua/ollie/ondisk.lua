-- What each file buffer's file was on disk (mtime, size, inode, and its content's digest) when the editor last read
-- or wrote it, so that the agent's save (ollie/saveDocuments) never writes over a change made on disk since by
-- something else (the user's `git checkout` in a terminal, a formatter, another editor). Vim's own `:w` asks then
-- (W13); the agent's save must not stop the editor at a question, so it refuses instead. The workspace is hostile
-- data: a file is read only when it is a regular one (never through a link, never blocking), to a bound.

local M = {}

-- A file past this many bytes is not read for its digest: its stamp alone says whether it changed.
local MAX_DIGEST = 2 * 1024 * 1024

---Buffer -> its file's stamp when last read or written ("absent": no file then), its content's digest (nil:
---not a regular file within MAX_DIGEST, or binary) and where its name led then (links followed; nil: nowhere).
---@type table<integer, {stamp: string, digest: string|nil, real: string|nil}>
local seen = {}

---@param buf integer
---@return string
local function stamp(buf)
  local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(buf))
  return st and table.concat({ st.mtime.sec, st.mtime.nsec, st.size, st.ino }, ":") or "absent"
end

---The first `max` + 1 bytes of the regular file at `path` (nil: not one, or a link). Opened once, without blocking
---(and without following a link where libuv names O_NOFOLLOW), so a FIFO swapped in never holds the editor; what is
---checked is the open file, and the size it claims is not trusted.
---@param path string
---@param max integer
---@return string|nil
function M.read_plain(path, max)
  local lst = vim.uv.fs_lstat(path)
  local c = vim.uv.constants
  local fd = lst and lst.type == "file" and vim.uv.fs_open(path, c.O_RDONLY + c.O_NONBLOCK + (c.O_NOFOLLOW or 0), 0)
  if not fd then
    return nil
  end
  local st = vim.uv.fs_fstat(fd)
  local pieces, length, piece = {}, 0, nil
  -- The file opened is the one looked at (not a link swapped in between); read in pieces, to the end or past `max`.
  if st and st.type == "file" and st.ino == lst.ino and st.dev == lst.dev then
    repeat
      piece = vim.uv.fs_read(fd, math.min(65536, max + 1 - length), length)
      table.insert(pieces, piece)
      length = length + (piece and #piece or 0)
    until not piece or piece == "" or length > max
  end
  vim.uv.fs_close(fd)
  return piece and table.concat(pieces) or nil
end

---The sha256 of the file at `path`, or nil (see `seen`).
---@param path string
---@return string|nil
local function digest(path)
  local data = M.read_plain(path, MAX_DIGEST)
  if not data or #data > MAX_DIGEST then
    return nil
  end
  local ok, sum = pcall(vim.fn.sha256, data) -- a NUL byte makes it a Blob, which sha256 refuses: binary, no digest
  return ok and sum or nil
end

---Note buffer `buf`'s file as the editor now knows it (a file buffer only).
---@param buf integer
function M.remember(buf)
  if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
    local before = stamp(buf)
    local sum = digest(vim.api.nvim_buf_get_name(buf))
    -- A write landing between the stamp and the read paired this stamp with the new content's digest: that change
    -- then passed as "the same bytes" and the agent's save wrote over it. No digest then: the stamp alone decides.
    seen[buf] = { stamp = before, digest = stamp(buf) == before and sum or nil,
      real = vim.uv.fs_realpath(vim.api.nvim_buf_get_name(buf)) }
  end
end

---Where `buf`'s name leads now when it is a link (or a dir on its way is) leading elsewhere than when the editor last
---read or wrote it (a step's `ln -sf ~/.ssh/id_rsa notes.txt`: Neovim's reload would read the key into the buffer,
---and the daemon take it for the file's text), else nil. The user's own link, unchanged, is no news.
---@param buf integer
---@return string|nil
function M.relinked(buf)
  local known, name = seen[buf], vim.api.nvim_buf_get_name(buf)
  local real = known and vim.uv.fs_realpath(name)
  local own = (vim.uv.fs_realpath(vim.fs.dirname(name)) or "") .. "/" .. vim.fs.basename(name)
  return real and real ~= own and real ~= known.real and real or nil
end

---Whether `buf`'s file changed on disk since the editor last read or wrote it (false when it never noted it). A file
---rewritten with the very same bytes (`sed -i` that matched nothing, a formatter with nothing to do: a new inode and
---mtime) did not change: nothing on disk would be lost.
---@param buf integer
---@return boolean
function M.changed(buf)
  local known = seen[buf]
  local now = stamp(buf)
  if known == nil or known.stamp == now then
    return false
  end
  if known.digest ~= nil and known.digest == digest(vim.api.nvim_buf_get_name(buf)) then
    known.stamp = now
    return false
  end
  return true
end

---Whether `buf`'s file, there when the editor last read or wrote it, is gone now: true once (then noted as gone).
---@param buf integer
---@return boolean
function M.gone(buf)
  local known = seen[buf]
  if known and known.stamp ~= "absent" and stamp(buf) == "absent" then
    M.remember(buf)
    return true
  end
  return false
end

-- The line break a write puts after each line, by 'fileformat'.
local BREAKS = { unix = "\n", dos = "\r\n", mac = "\r" }

-- The BOM a write with 'bomb' puts first, by 'fileencoding': Neovim puts one in a Unicode encoding only.
local BOMS = { ["utf-8"] = "\239\187\191", ["ucs-2"] = "\254\255", ["utf-16"] = "\254\255", ["ucs-2le"] = "\255\254",
  ["utf-16le"] = "\255\254", ["ucs-4"] = "\0\0\254\255", ["ucs-4le"] = "\255\254\0\0" }

---`text` (UTF-8) in encoding `fenc` as a write puts it, or nil (a character `fenc` has none for: the write fails).
---@param text string
---@param fenc string
---@return string|nil
local function encode(text, fenc)
  if fenc == "utf-8" then
    return text
  elseif fenc == "utf-16" or fenc == "ucs-2" then
    -- vim.iconv() gives these big-endian ones little-endian, after a BOM of its own: made so, each pair swapped.
    local le = vim.iconv(text, "utf-8", "utf-16le")
    return le and (le:gsub("(.)(.)", "%2%1"))
  end
  return vim.iconv(text, "utf-8", fenc)
end

---Whether `buf`'s file already holds exactly what writing `buf` would put there: its change on disk, if any, is this
---same text (ollie's undo or rewind put the file back as it put the buffer back), so a write loses nothing. The
---write's bytes: its line breaks, BOM and encoding (a CRLF, Latin-1 or UTF-16 file's buffer was left modified, though
---it held the disk's text, after a rewind and its undo). Reads only a regular file, to their size and one byte more.
---@param buf integer
---@return boolean
function M.holds(buf)
  local bo = vim.bo[buf]
  local eol, fenc = BREAKS[bo.fileformat], bo.fileencoding == "" and "utf-8" or bo.fileencoding
  if bo.binary or not eol then
    return false -- what a write puts there is not simply the lines: say changed, as before
  end
  local bom = bo.bomb and BOMS[fenc] or ""
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- One empty line is either no line at all (an empty file's buffer: a write puts nothing) or an empty line (a file
  -- of one line break: a write puts that back); only the size Neovim counts (the BOM's and the breaks') tells.
  local none = #lines == 1 and lines[1] == ""
    and vim.api.nvim_buf_call(buf, function() return vim.fn.wordcount().bytes end) == #bom
  local text = encode(none and "" or (table.concat(lines, eol) .. ((bo.eol or bo.fixeol) and eol or "")), fenc)
  text = text and bom .. text
  return text ~= nil and M.read_plain(vim.api.nvim_buf_get_name(buf), #text) == text
end

-- What a path that is not a regular file is, as the user is told it.
local KINDS = { fifo = "a FIFO", char = "a device", block = "a device", socket = "a socket", directory = "a directory" }

---What is at `path` when it is neither a regular file (through links) nor nothing ("a FIFO", "a device", ...), else
---nil. Reading it into a buffer would hold the editor: a FIFO waits on its writer for good (SIGTERM included), a link
---to /dev/zero reads until memory runs out.
---@param path string
---@return string|nil
function M.not_regular(path)
  local st = vim.uv.fs_stat(path)
  return st and st.type ~= "file" and (KINDS[st.type] or "not a regular file") or nil
end

---Buffer -> its augroup of guards, while its file is not a regular one and Neovim must not read it.
---@type table<integer, integer>
local held = {}

local group = vim.api.nvim_create_augroup("ollie_ondisk", { clear = true })

---Put back the lines `buf` had before the `:edit` that unloaded it (its read is refused), as they were.
---@param buf integer
---@param kept {lines: string[], modified: boolean}|nil
local function put_back(buf, kept)
  if kept then
    local levels = vim.bo[buf].undolevels
    vim.bo[buf].undolevels = -1 -- no undo step: the buffer is as it was, not changed
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, kept.lines)
    vim.bo[buf].undolevels = levels
    vim.bo[buf].modified = kept.modified
  end
end

---Hold off Neovim's reads and writes of `buf`, whose file is not a regular one now: its own reload (`:checktime`,
---autoread when the editor regains focus), the user's `:edit`, `:edit!` and `:write`: true the first time (tell the
---user then), false when already held.
---@param buf integer
---@return boolean
function M.hold(buf)
  if held[buf] then
    return false
  end
  held[buf] = vim.api.nvim_create_augroup("ollie_ondisk_held_" .. buf, { clear = true })
  -- 'autoread' reloads an unchanged buffer without asking FileChangedShell: off here, until the file is one again.
  vim.bo[buf].autoread = false
  vim.api.nvim_create_autocmd("FileChangedShell", {
    group = held[buf],
    buffer = buf,
    -- "": neither read nor asked (the W11 question's "Load" would read it, and hang).
    callback = function() vim.v.fcs_choice = "" end,
  })
  -- Neovim opens the file before BufReadPre, and a FIFO's open waits on its writer for good (SIGTERM included):
  -- only BufReadCmd comes before. `:edit` has unloaded the buffer by then: its lines are kept to put back.
  local kept
  vim.api.nvim_create_autocmd("BufUnload", {
    group = held[buf],
    buffer = buf,
    callback = function()
      kept = { lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), modified = vim.bo[buf].modified }
    end,
  })
  vim.api.nvim_create_autocmd("BufReadCmd", {
    group = held[buf],
    buffer = buf,
    nested = true,
    callback = function()
      local name = vim.api.nvim_buf_get_name(buf)
      local kind = M.not_regular(name)
      if kind then
        put_back(buf, kept)
        vim.api.nvim_echo({ { string.format("ollie: %s is %s now, not a file: not read (Neovim would wait on it)",
          vim.fn.fnamemodify(name, ":~:."), kind), "ErrorMsg" } }, true, {})
      else
        M.release(buf) -- a file again (or gone): Neovim reads it as it always does
        vim.cmd.edit()
      end
    end,
  })
  -- A write opens the file too, and a FIFO's waits on a reader for good (`:w` of the buffer, kept as it was).
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    group = held[buf],
    buffer = buf,
    nested = true,
    callback = function(a)
      local kind = M.not_regular(a.match)
      if kind then
        vim.api.nvim_echo({ { string.format("ollie: %s is %s now, not a file: not written (Neovim would wait on it)",
          vim.fn.fnamemodify(a.match, ":~:."), kind), "ErrorMsg" } }, true, {})
        return
      end
      -- A file there (or nothing): Neovim writes it as it always does, the buffer held again if its own is not one.
      M.release(buf)
      vim.cmd.write({ vim.fn.fnameescape(a.match), bang = vim.v.cmdbang == 1 })
      if M.not_regular(vim.api.nvim_buf_get_name(buf)) then
        M.hold(buf)
      end
    end,
  })
  return true
end

---Let Neovim read `buf` again as the user set it up (its file is a regular one again, or gone).
---@param buf integer
function M.release(buf)
  if held[buf] then
    pcall(vim.api.nvim_del_augroup_by_id, held[buf])
    held[buf] = nil
    vim.api.nvim_buf_call(buf, function() vim.cmd("setlocal autoread<") end)
  end
end

vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufWritePost", "FileChangedShellPost", "BufFilePost" }, {
  group = group,
  callback = function(a) M.remember(a.buf) end,
})
vim.api.nvim_create_autocmd("BufWipeout", {
  group = group,
  callback = function(a)
    if held[a.buf] then
      pcall(vim.api.nvim_del_augroup_by_id, held[a.buf])
    end
    seen[a.buf], held[a.buf] = nil, nil
  end,
})
-- Buffers read before the plugin loaded: as they are now (a change before this is not seen).
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(buf) then
    M.remember(buf)
  end
end

return M
