-- The agent's task plan (the daemon's `plan`, docs/PROTOCOL.md) as a checklist in a float at the top right of the
-- chat's transcript, while the plan has steps: done ones dimmed, the one in progress marked; folded (`gp` in the
-- transcript, per tab page: it covered up to a quarter of the transcript) to the step in progress. Methods of
-- ollie.Chat.
local M = {}

---@class ollie.ChatPlan
local P = {}
M.methods = P

local MARK = { completed = "✓", in_progress = "▸" }
local HL = { completed = "OllieDim", in_progress = "OllieToolRunning" }

---Take the session's plan when `plan` is one (`ollie/stateChanged` has it only when it changed), and draw it.
---@param plan table|nil `[{content, status}]`
function P:set_plan(plan)
  if type(plan) == "table" then
    self.plan = plan
  end
  self:draw_plan()
end

---Draw the plan float over the transcript window as the plan and that window are now (none: closed).
function P:draw_plan()
  local tw = self:windows()
  local steps, lines, done, all, now = self.plan or {}, {}, 0, 0, 1
  for n, step in ipairs(steps) do
    local status = type(step) == "table" and step.status or ""
    -- A long plan's `… N more steps` counts the steps it stands for, and those of them done.
    local counted = type(step) == "table" and type(step.steps) == "number" and type(step.done) == "number"
    done = done + (counted and step.done or status == "completed" and 1 or 0)
    all = all + (counted and step.steps or 1)
    now = status == "in_progress" and n or now
    -- The model's text: one line, whatever it holds.
    lines[n] = (MARK[status] or "○") .. " " .. tostring(type(step) == "table" and step.content or ""):gsub("%c", " ")
  end
  local folded = tw and vim.t[self.tab].ollie_plan_folded
  local first = folded and now or 1
  lines = folded and { lines[now] } or lines
  local float = self.plan_win and vim.api.nvim_win_is_valid(self.plan_win) and self.plan_win or nil
  if not tw or #lines == 0 or vim.api.nvim_win_get_width(tw) < 24 or vim.api.nvim_win_get_height(tw) < 4 then
    if float then
      vim.api.nvim_win_close(float, true)
    end
    self.plan_win = nil
    return
  end
  if not (self.plan_buf and vim.api.nvim_buf_is_valid(self.plan_buf)) then
    self.plan_buf = vim.api.nvim_create_buf(false, true)
    vim.bo[self.plan_buf].bufhidden = "hide"
  end
  local buf = self.plan_buf
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local ns = vim.api.nvim_create_namespace("ollie_plan")
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  for n, line in ipairs(lines) do
    local step = steps[first + n - 1]
    if type(step) == "table" and HL[step.status] then
      vim.api.nvim_buf_set_extmark(buf, ns, n - 1, 0, { end_col = #line, hl_group = HL[step.status] })
    end
  end
  local title = (" plan %d/%d "):format(done, all)
  local width = #title -- folded to a short step, the title still fits
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local opts = { relative = "win", win = tw, anchor = "NE", row = 0, col = vim.api.nvim_win_get_width(tw),
    width = math.min(width, math.floor(vim.api.nvim_win_get_width(tw) / 2)),
    height = math.min(#lines, math.floor(vim.api.nvim_win_get_height(tw) / 2)),
    title = title, title_pos = "right" }
  if float then
    vim.api.nvim_win_set_config(float, opts)
  else
    float = vim.api.nvim_open_win(buf, false, vim.tbl_extend("force", opts, { style = "minimal", border = "rounded",
      focusable = false, zindex = 40, noautocmd = true }))
    vim.wo[float].wrap = false
    self.plan_win = float
  end
  vim.api.nvim_win_set_cursor(float, { now - first + 1, 0 }) -- a long plan shows the step in progress
end

---Fold the plan's float to the step in progress, or unfold it, in the transcript's tab page.
function P:toggle_plan()
  vim.t[self.tab].ollie_plan_folded = not vim.t[self.tab].ollie_plan_folded
  self:draw_plan()
end

return M
