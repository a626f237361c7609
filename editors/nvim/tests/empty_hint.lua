-- An empty chat says how to start, on two dim lines (virtual text: no part of the transcript); the first prompt
-- takes its place.
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, "S").source:sub(2)), "helpers.lua"))
local R = H.results

---The hint lines the transcript shows: {row, text, group} each.
local function hints()
  local buf = H.current().transcript.buf
  local ns = vim.api.nvim_get_namespaces().ollie_hint
  return vim.tbl_map(function(m)
    local chunk, under = m[4].virt_text[1], m[4].virt_lines and m[4].virt_lines[1][1]
    return { m[2], chunk[1], chunk[2], under and under[1] }
  end, ns and vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true }) or {})
end

vim.cmd("OllieChat")
H.wait(function() return H.current().session ~= nil end, "the chat's session")
H.settle()
R.opened = hints()
R.opened_text = H.chat.text()

H.type_and_press("hi there")
H.wait_chat("_%(end%)_")
R.after_prompt = hints()
H.finish()
