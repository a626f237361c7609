-- What both client scenarios share: the vendored plugins on the runtimepath, `wait`, and the result file written
-- once the scenario ran (or failed, with its traceback).
local M = { result = {} }

---Wait for `pred`; an error naming `what` after `ms` (30 s by default).
function M.wait(what, pred, ms)
  if not vim.wait(ms or 30000, pred, 20) then
    error("timed out waiting for " .. what)
  end
end

---Wait until the `mode` option of `options()` (the client's config options) leaves "ask"; note it in the result.
function M.wait_mode_change(options)
  M.wait("the mode change", function()
    for _, o in ipairs(options()) do
      if o.category == "mode" and o.currentValue ~= "ask" then
        M.result.mode_after_pick = o.currentValue
        return true
      end
    end
  end, 15000)
end

---Run `scenario` with the plugins of OLLIE_TEST_PLUGINS loaded; write `M.result` (and any failure) to
---OLLIE_TEST_OUT, then quit.
function M.run(scenario)
  local out_path = assert(os.getenv("OLLIE_TEST_OUT"))
  local ok, err = xpcall(function()
    for dir in vim.gsplit(assert(os.getenv("OLLIE_TEST_PLUGINS")), ":") do
      vim.opt.rtp:prepend(dir)
    end
    scenario()
  end, debug.traceback)
  M.result.failure = not ok and err or nil
  local f = assert(io.open(out_path, "w"))
  f:write(vim.json.encode(M.result))
  f:close()
  vim.cmd("qa!")
end

return M
