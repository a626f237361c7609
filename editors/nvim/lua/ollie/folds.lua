-- The transcript's step-output folds, closed however they came: Neovim makes no expr fold while in insert mode (the
-- user typing in the input area as a turn streams, the default once `:OllieChat` opens it), and makes a new one
-- open after a fold the user opened. Each new fold is closed once made, in normal mode.
local M = {}

---@type table<integer, integer[]> the first lines (1-based) of the folds to close, by transcript buffer
local pending = {}

---Close the pending folds in the windows that show them (in insert mode: once it is left).
function M.close_pending()
  if vim.api.nvim_get_mode().mode:find("^i") then
    return -- InsertLeave schedules it again, then in normal mode
  end
  local now = pending
  pending = {}
  for buf, lines in pairs(now) do
    for _, win in ipairs(vim.api.nvim_buf_is_valid(buf) and vim.fn.win_findbuf(buf) or {}) do
      if vim.wo[win].foldenable and vim.wo[win].foldmethod == "expr" then
        vim.api.nvim_win_call(win, function()
          if vim.fn.foldlevel(lines[1]) == 0 then
            vim.wo[win][0].foldexpr = vim.wo[win].foldexpr -- the folds insert mode left unmade are made now
          end
          for _, l in ipairs(lines) do
            pcall(vim.cmd, l .. "foldclose") -- (a fold the window's width or 'foldminlines' leaves out: none)
          end
        end)
      end
    end
  end
end

---What a command's folded output ended with, shown after its exit header as a terminal's last line shows it (VS
---Code's step outcome): its last line that says something, past exit headers, `[stderr]` and a banner's `=` (a test
---run's "1 passed in 0.02s"; curl's error body on a 403 it exited 0 on). Nil for a fold that is not a command's.
---@param lines string[] the fold's lines, as the transcript shows them (`    │ ` before each)
---@return string|nil
function M.outcome(lines)
  if not (lines[1] or ""):match("^%s*│ %[step %d+ [^%]]*%] exit %d+$") then
    return nil
  end
  for i = #lines, 2, -1 do
    -- A banner's `=`s taken off each end as runs, trimmed again: `%s*=+$` was tried from each character, so a
    -- line of 20,000 spaces held Neovim 10 s at every redraw.
    local l = vim.trim((lines[i]:gsub("^%s*│", ""))):gsub("^=+", "")
    l = vim.trim(l:sub(1, #l - #l:reverse():match("^=*")))
    if l ~= "" and l ~= "[stderr]" and not l:match("^%[[^%]]*%]%s*exit %d+$") then
      return l
    end
  end
end

local watching = false

---Close the fold that starts at `line` of transcript `buf`, now or once the user leaves insert mode.
---@param buf integer
---@param line integer 1-based
function M.close(buf, line)
  pending[buf] = pending[buf] or {}
  table.insert(pending[buf], line)
  if not watching then
    watching = true
    vim.api.nvim_create_autocmd("InsertLeave", { group = vim.api.nvim_create_augroup("ollie_folds", {}),
      callback = function() vim.schedule(M.close_pending) end })
  end
  M.close_pending()
end

return M
