-- What an accept tells the server besides the item's id: how it was taken
-- ("full", "word" or "line") and how much of the suggestion's text is
-- accepted so far, in UTF-16 code units (how LSP counts characters). The
-- server follows the accepted text and counts how much of it is still there
-- later (acceptance in scopecache/stats).
local M = {}

local has_011 = vim.fn.has("nvim-0.11") == 1

--- Length of `text` in UTF-16 code units.
---@param text string
---@return integer
function M.utf16_len(text)
  local ok, len
  if has_011 then
    ok, len = pcall(vim.str_utfindex, text, "utf-16")
  else
    local _
    ok, _, len = pcall(vim.str_utfindex, text)
  end
  return ok and len or #text
end

--- The argument added to scopecache.accepted for one accept.
---@param kind string "all", "word" or "line"
---@param accepted string the suggestion's text accepted so far (this accept included)
---@param done boolean nothing of the suggestion is left
---@return table
function M.details(kind, accepted, done)
  return {
    kind = (done or kind == "all") and "full" or kind,
    acceptedLength = M.utf16_len(accepted),
  }
end

return M
