-- scopecache for Neovim: starts the scopecache language server and shows
-- its inline completions as ghost text.
--
--   require("scopecache").setup({
--     cmd = { "scopecache", "serve" },
--     settings = { endpoint = "https://127.0.0.1:8443/v1", model = "m" },
--   })
local config = require("scopecache.config")

local M = {}

--- The oldest Neovim this plugin runs on.
M.MIN_VERSION = "0.8"

--- This Neovim's version as "major.minor.patch" (vim.version() has no
--- tostring before 0.9, and the version check must read well on 0.7).
function M.version_text()
  local v = vim.version()
  return ("%d.%d.%d"):format(v.major, v.minor, v.patch)
end

local function builtin_available(opts)
  return opts.builtin and vim.fn.has("nvim-0.12") == 1 and vim.lsp.inline_completion ~= nil
end

local function on_attach(opts)
  return function(client, bufnr)
    if client.name ~= require("scopecache.lsp").name then
      return
    end
    if builtin_available(opts) then
      vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
      require("scopecache.keys").attach_builtin(bufnr, opts)
    else
      require("scopecache.ghost").attach(bufnr, opts)
      require("scopecache.keys").attach_ghost(bufnr, opts)
    end
  end
end

--- Configures and starts scopecache. See :help scopecache-setup.
---@param opts table|nil
function M.setup(opts)
  if vim.fn.has("nvim-" .. M.MIN_VERSION) ~= 1 then
    vim.notify(
      ("scopecache needs Neovim %s or newer (this is %s)"):format(M.MIN_VERSION, M.version_text()),
      vim.log.levels.ERROR
    )
    return false
  end
  config.state.given = opts
  local unknown = config.unknown(opts)
  if #unknown > 0 then
    -- a typo must not pass silently, but it need not stop completions either
    vim.notify("scopecache: " .. table.concat(unknown, "; "), vim.log.levels.WARN)
  end
  local merged = config.merge(opts)
  local problems = config.check(merged)
  if #problems > 0 then
    vim.notify("scopecache: " .. table.concat(problems, "; "), vim.log.levels.ERROR)
    return false
  end
  config.options = merged
  config.state.setup = true
  require("scopecache.highlight").setup()
  require("scopecache.lsp").start(merged, on_attach(merged))
  return true
end

--- Stops the server and starts it again with the options of setup() (:ScopeCacheRestart).
function M.restart()
  if not config.state.setup then
    vim.notify("scopecache: setup() has not run, nothing to restart", vim.log.levels.WARN)
    return false
  end
  require("scopecache.ghost").clear_all()
  require("scopecache.lsp").restart(function()
    vim.notify("scopecache: server restarted")
  end)
  return true
end

local function set_enabled(enabled)
  config.state.enabled = enabled
  if not enabled then
    require("scopecache.ghost").clear_all()
  end
  if builtin_available(config.options) then
    vim.lsp.inline_completion.enable(enabled)
  end
  vim.notify("scopecache: completions " .. (enabled and "on" or "off"))
end

--- Turns suggestions on (:ScopeCacheEnable).
function M.enable()
  set_enabled(true)
end

--- Turns suggestions off; the server keeps running (:ScopeCacheDisable).
function M.disable()
  set_enabled(false)
end

--- Turns suggestions off when on, on when off (:ScopeCacheToggle).
function M.toggle()
  set_enabled(not config.state.enabled)
end

--- Whether suggestions are on.
function M.is_enabled()
  return config.state.enabled
end

--- Replaces the server settings and sends them to the running server.
---@param settings table
function M.update_settings(settings)
  config.options.settings = settings
  require("scopecache.lsp").update_settings(settings)
end

--- Calls callback(stats) with the server's scopecache/stats answer.
function M.stats(callback)
  require("scopecache.stats").fetch(callback)
end

--- Accepts the visible suggestion in the current buffer ("all", "word" or "line").
function M.accept(kind)
  return require("scopecache.ghost").accept(vim.api.nvim_get_current_buf(), kind, config.options)
end

return M
