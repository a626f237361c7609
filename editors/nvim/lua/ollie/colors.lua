-- ollie's highlight groups link to stock ones, unless that leaves their text unreadable in the colorscheme: many of
-- Vim's own (morning, peachpuff, shine, zellner...) give DiagnosticHint a light grey on their light background
-- (contrast 1.2). Such a group gets the stock group's look with its colour moved toward the text's until it reads.
local M = {}

-- The least contrast (WCAG 2 ratio) a group's text keeps with its background: 3 is the bar for large or bold text
-- and for what is not body text (a separator, a status mark); below it, text is hard to read.
M.MIN_CONTRAST = 3

---The relative luminance (WCAG 2) of a 24-bit colour.
---@param rgb integer
---@return number
local function luminance(rgb)
  local l = 0
  for i, weight in ipairs({ 0.2126, 0.7152, 0.0722 }) do
    local v = bit.band(bit.rshift(rgb, 8 * (3 - i)), 255) / 255
    l = l + weight * (v <= 0.03928 and v / 12.92 or ((v + 0.055) / 1.055) ^ 2.4)
  end
  return l
end

---The contrast ratio (WCAG 2, 1 to 21) of two 24-bit colours.
---@param a integer
---@param b integer
---@return number
function M.contrast(a, b)
  local x, y = luminance(a), luminance(b)
  return (math.max(x, y) + 0.05) / (math.min(x, y) + 0.05)
end

---`a` moved toward `b` by `t` (0 to 1), channel by channel.
---@param a integer
---@param b integer
---@param t number
---@return integer
local function mix(a, b, t)
  local out = 0
  for shift = 16, 0, -8 do
    local x, y = bit.band(bit.rshift(a, shift), 255), bit.band(bit.rshift(b, shift), 255)
    out = out + bit.lshift(math.floor(x + (y - x) * t + 0.5), shift)
  end
  return out
end

---The resolved colours a group's text shows in (its own, else Normal's): fg, bg; nil when not known (no GUI
---colours: a 'notermguicolors' scheme with cterm ones only), or reversed.
---@param name string
---@return integer|nil fg, integer|nil bg, table hl
function M.resolve(name)
  local hl = vim.api.nvim_get_hl(0, { name = name, link = false })
  local normal = vim.api.nvim_get_hl(0, { name = "Normal", link = false })
  if hl.reverse then
    return nil, nil, hl
  end
  return hl.fg or normal.fg, hl.bg or normal.bg, hl
end

---The definition for a group meant to look like `link`: the link itself when its text reads (or its colours are
---not known), else `link`'s attributes with a foreground moved toward Normal's text (toward black or white when the
---colorscheme has no Normal colour) just enough to reach MIN_CONTRAST. Always `default`: the user's own wins.
---@param link string
---@return vim.api.keyset.highlight
function M.readable(link)
  local fg, bg, hl = M.resolve(link)
  if not (fg and bg) or M.contrast(fg, bg) >= M.MIN_CONTRAST then
    return { link = link, default = true }
  end
  local normal = vim.api.nvim_get_hl(0, { name = "Normal", link = false }).fg
  local target = normal and M.contrast(normal, bg) >= M.MIN_CONTRAST and normal
    or (luminance(bg) > 0.18 and 0x000000 or 0xffffff)
  local spec = vim.deepcopy(hl) --[[@as vim.api.keyset.highlight]]
  spec.default = true
  for step = 1, 10 do
    spec.fg = mix(fg, target, step / 10)
    if M.contrast(spec.fg --[[@as integer]], bg) >= M.MIN_CONTRAST then
      break
    end
  end
  return spec
end

-- What define() last made each group: a colorscheme that does not `:hi clear` leaves them so, and they are made
-- anew for it (not the user's own, which differ).
local defined = {}

---Define each group as readable(its stock group), unless the user's own `:hi` replaced what was defined last.
---@param groups table<string, string> group name -> the stock group it stands for
function M.define(groups)
  for name, link in pairs(groups) do
    if defined[name] and vim.deep_equal(vim.api.nvim_get_hl(0, { name = name }), defined[name]) then
      vim.api.nvim_set_hl(0, name, {})
    end
    vim.api.nvim_set_hl(0, name, M.readable(link))
    defined[name] = vim.api.nvim_get_hl(0, { name = name })
  end
end

return M
