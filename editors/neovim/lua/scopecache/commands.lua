-- The user commands. Defined by plugin/scopecache.lua when the plugin directory
-- is on 'runtimepath' at startup, and again by setup() for plugin managers that
-- add it later (lazy.nvim, for a plugin in a repository's subdirectory).
local M = {}

local function define(name, fn, opts)
  opts = opts or {}
  vim.api.nvim_create_user_command(name, fn, opts)
end

--- Defines every :ScopeCache* command (again: it replaces them).
function M.define()
  define("ScopeCacheStats", function()
    require("scopecache.stats").show()
  end, { desc = "scopecache: show cache and upstream stats" })

  define("ScopeCacheClear", function()
    require("scopecache.stats").clear()
  end, { desc = "scopecache: clear the server's cache" })

  define("ScopeCacheRestart", function()
    require("scopecache").restart()
  end, { desc = "scopecache: restart the language server" })

  define("ScopeCacheToggle", function()
    require("scopecache").toggle()
  end, { desc = "scopecache: turn suggestions on or off" })

  define("ScopeCacheEnable", function()
    require("scopecache").enable()
  end, { desc = "scopecache: turn suggestions on" })

  define("ScopeCacheDisable", function()
    require("scopecache").disable()
  end, { desc = "scopecache: turn suggestions off" })

  define("ScopeCacheInstall", function(args)
    require("scopecache").install({ source = args.args ~= "" and args.args or nil, fresh = args.bang })
  end, {
    nargs = "?",
    bang = true,
    complete = "file",
    desc = "scopecache: install the server (a wheel, sdist, directory or pip requirement) into Neovim's data directory",
  })
end

return M
