-- The chat buffer reads as markdown: treesitter's where Neovim has the parser, else the regex syntax.
vim.bo.commentstring = "<!-- %s -->"
-- Its inline markdown without the conceal of `[x]` as a shortcut link (a chat has none): the answer's `items[0]`
-- showed as `items0`, `list[str]` as `liststr`, "[Errno 111]" as "Errno 111". True links (`[text](url)`) still
-- show their text alone.
---@return string|nil
local function inline_query()
  local texts = {}
  for _, file in ipairs(vim.treesitter.query.get_files("markdown_inline", "highlights")) do
    table.insert(texts, table.concat(vim.fn.readfile(file), "\n"))
  end
  if #texts == 0 then
    return nil
  end
  local brackets = '%(shortcut_link%s*%[%s*"%["%s*"%]"%s*%]%s*@[%w%.]+%s*%(#set! conceal ""%)%)'
  local query = table.concat(texts, "\n"):gsub(brackets, "")
  return query
end
local function start()
  local parser = assert(vim.treesitter.get_parser(0, "markdown", { error = false }))
  vim.treesitter.highlighter.new(parser, { queries = { markdown_inline = inline_query() } })
end
if not pcall(start) then
  vim.bo.syntax = "markdown"
  -- The regex syntax marks each `_` inside a word (OLLIE_OPENAI_URL, file_edit) as an error, in red.
  vim.cmd("silent! syntax clear markdownError")
end
