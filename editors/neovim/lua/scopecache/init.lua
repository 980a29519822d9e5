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

--- Whether setup() was given its own server command.
local function cmd_given()
  return config.state.given ~= nil and config.state.given.cmd ~= nil
end

--- The command the server starts with: setup()'s cmd when given, else
--- `scopecache serve` from PATH, else the server :ScopeCacheInstall installed;
--- nil when there is none.
---@return string[]|nil
function M.server_cmd()
  return require("scopecache.install").command(config.options, cmd_given())
end

local told_missing = false

--- Starts the server with the command server_cmd() finds; says once when there is none.
local function start_server()
  local cmd = M.server_cmd()
  if not cmd then
    if not told_missing then
      told_missing = true
      vim.notify(
        "scopecache: no server to start: run :ScopeCacheInstall (it needs Python 3.11+), "
          .. "or put scopecache on PATH (pip install scopecache), or set cmd in setup()",
        vim.log.levels.WARN
      )
    end
    return false
  end
  told_missing = false
  local opts = vim.tbl_extend("force", config.options, { cmd = cmd })
  require("scopecache.lsp").start(opts, on_attach(opts))
  return true
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
  require("scopecache.commands").define()
  require("scopecache.highlight").setup()
  start_server()
  return true
end

--- Stops the server and starts it again with the options of setup() (:ScopeCacheRestart).
function M.restart()
  if not config.state.setup then
    vim.notify("scopecache: setup() has not run, nothing to restart", vim.log.levels.WARN)
    return false
  end
  require("scopecache.ghost").clear_all()
  -- the command is looked up again: the server may have been installed meanwhile
  require("scopecache.lsp").stop(function()
    if start_server() then
      vim.notify("scopecache: server restarted")
    end
  end)
  return true
end

--- After an install: starts the installed server, or restarts the running one
--- so that the new version answers (nothing to do before setup(), or when
--- setup() was given its own cmd).
function M.on_installed()
  if not config.state.setup or cmd_given() then
    return
  end
  if #require("scopecache.lsp").clients() > 0 then
    M.restart()
  else
    start_server()
  end
end

--- Installs the server into stdpath("data")/scopecache (:ScopeCacheInstall),
--- with progress messages, then starts it. See :help :ScopeCacheInstall.
---@param opts scopecache.InstallOptions|nil source, python, fresh
function M.install(opts)
  local install = require("scopecache.install")
  opts = vim.tbl_extend("force", {}, opts or {})
  opts.on_progress = opts.on_progress
    or function(message, pip_line)
      if pip_line then
        -- pip's own lines pass by in the command line, not in :messages
        vim.api.nvim_echo({ { "scopecache: pip: " .. message } }, false, {})
      else
        vim.notify("scopecache: " .. message, vim.log.levels.INFO)
      end
    end
  local on_done = opts.on_done
  opts.on_done = function(ok, message)
    if on_done then
      on_done(ok, message)
    end
    if not ok then
      vim.notify("scopecache: install failed: " .. message, vim.log.levels.ERROR)
      return
    end
    local cmd = config.state.setup and M.server_cmd() or nil
    if cmd and cmd[1] ~= install.server_exe() and not cmd_given() then
      message = message .. ("; but %s on PATH comes first (set cmd to use the installed one)"):format(cmd[1])
    end
    vim.notify("scopecache: " .. message, vim.log.levels.INFO)
    M.on_installed()
  end
  if not install.install(opts) then
    vim.notify("scopecache: an install is already running", vim.log.levels.WARN)
    return false
  end
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
