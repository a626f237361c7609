-- What the chat says, as it opens, when the daemon's backend cannot take a turn (`ollie/state`'s backendStatus):
-- the user learns that the model server is down, and where it was asked, before a prompt fails on it (VS Code's
-- onboarding does the same).
local client = require("ollie.client")

local M = {}

---Where a backend hint's settings go, as the daemon said (backendStatus' settingsFile, `ollie doctor`'s settings file):
---a user of the editor has no shell to `export` them in. nil when it did not say.
---@param path any
---@return string|nil
function M.settings_file(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  return "ollie's settings go in " .. vim.fn.fnamemodify(path, ":~") .. " (KEY=VALUE lines)"
end

local function str(value)
  return type(value) == "string" and value or ""
end

---The chat's note for a backendStatus that cannot take a turn; nil when it can (or the status is not one).
---@param status table|nil
---@return string|nil
function M.problem(status)
  if type(status) ~= "table" or status.ok ~= false then
    return nil
  end
  local err, url, hint = str(status.error), str(status.url), str(status.hint)
  local line = "ollie cannot take a turn yet: " .. (err ~= "" and err or "the backend does not answer")
  if url ~= "" and not (line .. hint):find(url, 1, true) then
    line = line .. " (asked at " .. url .. ")"
  end
  local lines = { line }
  if hint ~= "" and not line:find(hint, 1, true) then
    table.insert(lines, hint)
  end
  local settings = M.settings_file(status.settingsFile)
  local again = ":checkhealth ollie checks it again; :OllieRestart once it is fixed"
  table.insert(lines, settings and settings .. "; " .. again or again)
  return table.concat(lines, "\n")
end

---A turn's error line when it is the problem the chat's note said already, with what to do (its text again, under
---the note, was all the user saw); nil for any other error. Once: a later failure says all of it again.
---@param chat ollie.Chat
---@param err string the turn's error
---@return string|nil
function M.turn_error(chat, err)
  local said = chat.backend_said
  if not said or not err:find(said, 1, true) then
    return nil
  end
  chat.backend_said = nil
  return "error: ollie cannot take a turn yet (see above: what to do)"
end

---Say in `chat` when its session's backend cannot take a turn; `state` is an `ollie/state` answer already had.
---@param chat ollie.Chat
---@param state table|nil
function M.check(chat, state)
  local function tell(res)
    local status = type(res) == "table" and res.backendStatus or nil
    local text = M.problem(status)
    if text then
      chat.transcript:note(text, "OllieError")
      chat.backend_said = str(status.error) ~= "" and status.error or nil
    end
  end
  if state then
    return tell(state)
  end
  client.request("ollie/state", { session = chat.session }, function(err, res)
    if not err then
      tell(res)
    end
  end)
end

return M
