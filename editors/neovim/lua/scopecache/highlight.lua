-- The ScopeCacheGhost highlight group of the ghost text.
--
-- It links to Comment, so ghost text looks like the colour scheme's comments.
-- Where Comment has no terminal colour (a scheme that sets only guifg, used
-- without 'termguicolors'), a link would draw ghost text exactly like typed
-- text; then the group gets Comment's GUI colour plus a grey ctermfg. A
-- ScopeCacheGhost the user defined (before or after setup()) is left alone;
-- ours is set again after every :colorscheme, from the new Comment.
local M = {}

M.GROUP = "ScopeCacheGhost"
--- xterm-256 grey used when Comment has no terminal colour
M.CTERM_FALLBACK = 244

local has_09 = vim.fn.has("nvim-0.9") == 1

--- Comment's resolved attributes: { fg, ctermfg, italic } (any may be nil).
local function comment()
  if has_09 then
    local hl = vim.api.nvim_get_hl(0, { name = "Comment", link = false })
    return { fg = hl.fg, ctermfg = hl.ctermfg, italic = hl.italic }
  end
  local gui = vim.api.nvim_get_hl_by_name("Comment", true)
  local cterm = vim.api.nvim_get_hl_by_name("Comment", false)
  return { fg = gui.foreground, ctermfg = cterm.foreground, italic = gui.italic }
end

--- What define() set last (nil before): a group that differs was set by the user.
local applied

local function same(current, spec)
  return current.link == spec.link and current.fg == spec.fg and current.ctermfg == spec.ctermfg
end

--- Whether ScopeCacheGhost is unset or still what we set.
local function ours()
  if not has_09 then
    return applied == nil -- before 0.9 the group cannot be read back: set it once
  end
  local current = vim.api.nvim_get_hl(0, { name = M.GROUP })
  return next(current) == nil or (applied ~= nil and same(current, applied))
end

--- Defines ScopeCacheGhost from Comment, unless the user defined it.
function M.define()
  if not ours() then
    return
  end
  local c = comment()
  local spec
  if c.ctermfg ~= nil then
    spec = { link = "Comment" }
  else
    spec = { fg = c.fg, ctermfg = M.CTERM_FALLBACK, italic = c.italic }
  end
  vim.api.nvim_set_hl(0, M.GROUP, spec)
  applied = spec
end

--- Defines the group now and after every colour scheme change.
function M.setup()
  M.define()
  local group = vim.api.nvim_create_augroup("scopecache.highlight", { clear = true })
  vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = M.define })
end

return M
