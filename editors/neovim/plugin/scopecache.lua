-- User commands; the server starts only when require("scopecache").setup() is called.
if vim.g.loaded_scopecache then
  return
end
vim.g.loaded_scopecache = true

if vim.fn.has("nvim-0.8") ~= 1 then
  vim.api.nvim_echo({ { "scopecache needs Neovim 0.8 or newer", "ErrorMsg" } }, true, {})
  return
end

require("scopecache.commands").define()
