-- User commands; the server starts only when require("scopecache").setup() is called.
if vim.g.loaded_scopecache then
  return
end
vim.g.loaded_scopecache = true

if vim.fn.has("nvim-0.8") ~= 1 then
  vim.api.nvim_echo({ { "scopecache needs Neovim 0.8 or newer", "ErrorMsg" } }, true, {})
  return
end

vim.api.nvim_create_user_command("ScopeCacheStats", function()
  require("scopecache.stats").show()
end, { desc = "scopecache: show cache and upstream stats" })

vim.api.nvim_create_user_command("ScopeCacheClear", function()
  require("scopecache.stats").clear()
end, { desc = "scopecache: clear the server's cache" })

vim.api.nvim_create_user_command("ScopeCacheRestart", function()
  require("scopecache").restart()
end, { desc = "scopecache: restart the language server" })

vim.api.nvim_create_user_command("ScopeCacheToggle", function()
  require("scopecache").toggle()
end, { desc = "scopecache: turn suggestions on or off" })

vim.api.nvim_create_user_command("ScopeCacheEnable", function()
  require("scopecache").enable()
end, { desc = "scopecache: turn suggestions on" })

vim.api.nvim_create_user_command("ScopeCacheDisable", function()
  require("scopecache").disable()
end, { desc = "scopecache: turn suggestions off" })
