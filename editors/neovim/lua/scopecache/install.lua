-- The server, installed on demand (:ScopeCacheInstall, or a plugin manager's
-- build step): a virtual environment in stdpath("data")/scopecache/venv, made
-- with the first Python 3.11+ found, and scopecache pip-installed into it
-- with its dependencies. The source is a wheel, an sdist, a directory or any
-- pip requirement; by default the repository this plugin lives in when it is
-- a checkout, else the package "scopecache". Everything runs as jobs
-- (jobstart): Neovim stays responsive while pip works.
local M = {}

--- The oldest Python the server runs on.
M.MIN_PYTHON = { 3, 11 }

--- Interpreter names tried, in order, after setup({ python = ... }) and g:python3_host_prog.
M.PYTHONS = { "python3", "python", "python3.14", "python3.13", "python3.12", "python3.11" }

--- Extras installed with the default source: the grammars of every default filetype.
M.DEFAULT_EXTRAS = "[languages]"

local is_windows = vim.fn.has("win32") == 1

--- Where installs live: stdpath("data")/scopecache.
function M.root()
  return vim.fn.stdpath("data") .. "/scopecache"
end

--- The virtual environment the server is installed into.
function M.venv()
  return M.root() .. "/venv"
end

local function venv_bin(name)
  if is_windows then
    return M.venv() .. "/Scripts/" .. name .. ".exe"
  end
  return M.venv() .. "/bin/" .. name
end

--- The installed server's executable (it may not exist).
function M.server_exe()
  return venv_bin("scopecache")
end

--- Whether :ScopeCacheInstall has installed a server.
function M.installed()
  return vim.fn.executable(M.server_exe()) == 1
end

--- The server command: opts.cmd when setup() was given one (`given`); else
--- opts.cmd when its program is on PATH; else the installed server with
--- opts.cmd's arguments; nil when there is none.
---@param opts table merged setup() options
---@param given boolean whether setup() was given cmd
---@return string[]|nil
function M.command(opts, given)
  if given or vim.fn.executable(opts.cmd[1]) == 1 then
    return opts.cmd
  end
  if M.installed() then
    return { M.server_exe(), unpack(opts.cmd, 2) }
  end
  return nil
end

--- The root of the scopecache repository this plugin lives in, or nil when
--- the plugin was copied out of one.
function M.checkout()
  local here = debug.getinfo(1, "S").source:sub(2) -- <root>/editors/neovim/lua/scopecache/install.lua
  local root = vim.fn.fnamemodify(here, ":p:h:h:h:h:h")
  local pyproject = root .. "/pyproject.toml"
  if vim.fn.filereadable(pyproject) ~= 1 then
    return nil
  end
  for _, line in ipairs(vim.fn.readfile(pyproject, "", 40)) do
    if line:match('^name%s*=%s*"scopecache"') then
      return root
    end
  end
  return nil
end

--- What pip installs when no source is given: the checkout, else the package, with the grammars.
function M.default_source()
  return (M.checkout() or "scopecache") .. M.DEFAULT_EXTRAS
end

--- A source as pip should get it: an existing path (optionally with
--- "[extras]") made absolute, anything else unchanged.
---@param source string|nil
function M.resolve_source(source)
  if source == nil or vim.trim(source) == "" then
    return M.default_source()
  end
  source = vim.trim(source)
  local path, extras = source:match("^(.-)(%[[^%]]*%])$")
  path, extras = path or source, extras or ""
  local normalized = vim.fs.normalize(path)
  if vim.loop.fs_stat(normalized) then
    local absolute = vim.fn.fnamemodify(normalized, ":p"):gsub("[/\\]$", "")
    return absolute .. extras
  end
  return source
end

--- "3.11.7" >= M.MIN_PYTHON?
function M.recent_enough(version)
  local major, minor = (version or ""):match("^(%d+)%.(%d+)")
  major, minor = tonumber(major), tonumber(minor)
  if not major then
    return false
  end
  return major > M.MIN_PYTHON[1] or (major == M.MIN_PYTHON[1] and minor >= M.MIN_PYTHON[2])
end

local VERSION_SCRIPT = "import sys; print('%d.%d.%d' % sys.version_info[:3])"

--- The interpreters to try, most specific first, each once.
function M.python_candidates(python)
  local names = {}
  local configured = python or require("scopecache.config").options.python
  if type(configured) == "string" and configured ~= "" then
    table.insert(names, configured)
  end
  if type(vim.g.python3_host_prog) == "string" and vim.g.python3_host_prog ~= "" then
    table.insert(names, vim.g.python3_host_prog)
  end
  vim.list_extend(names, M.PYTHONS)
  local seen, candidates = {}, {}
  for _, name in ipairs(names) do
    local exe = vim.fn.exepath(vim.fs.normalize(name))
    if exe ~= "" and not seen[exe] then
      seen[exe] = true
      table.insert(candidates, { name = name, exe = exe })
    end
  end
  return candidates
end

--- What to tell the user when no Python 3.11+ is found (`tried`: "python3 3.9.2", ...).
function M.no_python_message(tried)
  local seen = #tried > 0 and ("found only " .. table.concat(tried, ", ")) or "none on PATH"
  return table.concat({
    ("no Python %d.%d or newer (%s)."):format(M.MIN_PYTHON[1], M.MIN_PYTHON[2], seen),
    "Install one - Debian/Ubuntu: sudo apt install python3.11 python3.11-venv;",
    "Fedora: sudo dnf install python3.12; macOS: brew install python@3.12;",
    "Windows: winget install Python.Python.3.12; or from python.org -",
    'then run :ScopeCacheInstall again (or point setup({ python = "/path/to/python3.12" }) at it).',
  }, " ")
end

--- The first Python 3.11+ found, synchronously (for :checkhealth): exe, version; or nil, tried.
function M.find_python_now(python)
  local tried = {}
  for _, candidate in ipairs(M.python_candidates(python)) do
    local out = vim.fn.system({ candidate.exe, "-c", VERSION_SCRIPT })
    local version = vim.v.shell_error == 0 and out:match("(%d+%.%d+%.%d+)") or nil
    if M.recent_enough(version) then
      return candidate.exe, version
    end
    table.insert(tried, ("%s %s"):format(candidate.name, version or "(does not run)"))
  end
  return nil, tried
end

--- The installed server's version ("0.1.0"), or nil and why not.
function M.installed_version()
  if not M.installed() then
    return nil, "not installed"
  end
  local out = vim.fn.system({ M.server_exe(), "--version" })
  local version = vim.v.shell_error == 0 and out:match("scopecache%s+(%S+)") or nil
  if not version then
    return nil, vim.trim(out)
  end
  return version
end

--- Runs `cmd` as a job; on_line(line) for each output line (stdout and
--- stderr), then on_exit(code, lines).
local function run(cmd, on_line, on_exit)
  local lines = {}
  local partial = { stdout = "", stderr = "" }
  local function take(line)
    line = line:gsub("\r", "")
    if line ~= "" then
      table.insert(lines, line)
      if on_line then
        on_line(line)
      end
    end
  end
  local function reader(stream)
    return function(_, data)
      if not data or #data == 0 then
        return
      end
      data[1] = partial[stream] .. data[1]
      partial[stream] = table.remove(data)
      for _, line in ipairs(data) do
        take(line)
      end
    end
  end
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    on_stdout = reader("stdout"),
    on_stderr = reader("stderr"),
    on_exit = function(_, code)
      take(partial.stdout)
      take(partial.stderr)
      on_exit(code, lines)
    end,
  })
  if not ok or job <= 0 then
    vim.schedule(function()
      on_exit(-1, { ("cannot run %s: %s"):format(cmd[1], ok and "not executable" or tostring(job)) })
    end)
  end
end

--- The first Python 3.11+ found, asynchronously: done(exe, version) or done(nil, tried).
function M.find_python(python, done)
  local candidates = M.python_candidates(python)
  local tried = {}
  local function try(i)
    local candidate = candidates[i]
    if not candidate then
      return done(nil, tried)
    end
    run({ candidate.exe, "-c", VERSION_SCRIPT }, nil, function(code, lines)
      local version = code == 0 and table.concat(lines, " "):match("(%d+%.%d+%.%d+)") or nil
      if M.recent_enough(version) then
        return done(candidate.exe, version)
      end
      table.insert(tried, ("%s %s"):format(candidate.name, version or "(does not run)"))
      try(i + 1)
    end)
  end
  try(1)
end

local function tail(lines, n)
  return table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1), #lines), "\n")
end

--- The install running now, if any.
local running = nil

--- Whether an install is running.
function M.busy()
  return running ~= nil
end

---@class scopecache.InstallOptions
---@field source string|nil wheel, sdist, directory or pip requirement (default: M.default_source())
---@field python string|nil the Python to make the virtual environment with (default: the first 3.11+ found)
---@field fresh boolean|nil remove an existing virtual environment first
---@field on_progress fun(message: string, pip_line: boolean)|nil each step, and each line pip prints
---@field on_done fun(ok: boolean, message: string)|nil the outcome, in one line (or the error with pip's last lines)

--- Installs the server; returns false (and calls nothing) when an install is already running.
---@param opts scopecache.InstallOptions|nil
function M.install(opts)
  opts = opts or {}
  if running then
    return false
  end
  local progress = opts.on_progress or function() end
  local source = M.resolve_source(opts.source)
  local venv = M.venv()
  local python = venv_bin("python")
  running = { source = source }
  local function finish(ok, message)
    running = nil
    if opts.on_done then
      opts.on_done(ok, message)
    end
  end
  local function fail(step, lines, hint)
    local text = ("%s failed"):format(step)
    if lines and #lines > 0 then
      text = text .. ":\n" .. tail(lines, 12)
    end
    finish(false, hint and (text .. "\n" .. hint) or text)
  end

  local function check()
    run({ M.server_exe(), "--version" }, nil, function(code, lines)
      local version = code == 0 and table.concat(lines, " "):match("scopecache%s+(%S+)") or nil
      if not version then
        return fail("the installed server's --version", lines)
      end
      finish(true, ("scopecache %s installed in %s"):format(version, venv))
    end)
  end

  local function pip_install(force)
    progress((force and "pip install --force-reinstall " or "pip install ") .. source)
    local cmd = { python, "-m", "pip", "install", "--upgrade", "--disable-pip-version-check" }
    if force then
      table.insert(cmd, "--force-reinstall")
    end
    table.insert(cmd, source)
    run(cmd, function(line)
      progress(line, true)
    end, function(code, lines)
      if code ~= 0 then
        return fail("pip install " .. source, lines)
      end
      -- pip keeps an installed wheel of the same version (a local directory
      -- or sdist it rebuilds and reinstalls): install that wheel again, so
      -- that what runs is what was asked for. A failed install above left
      -- the old server in place.
      if not force and table.concat(lines, "\n"):find("already installed with the same version", 1, true) then
        return pip_install(true)
      end
      check()
    end)
  end

  local function make_venv()
    M.find_python(opts.python, function(exe, version_or_tried)
      if not exe then
        return finish(false, M.no_python_message(version_or_tried))
      end
      local version = version_or_tried
      progress(("creating %s with Python %s (%s)"):format(venv, version, exe))
      vim.fn.mkdir(M.root(), "p")
      run({ exe, "-m", "venv", venv }, nil, function(code, lines)
        if code ~= 0 then
          local text = table.concat(lines, "\n")
          local hint
          if text:find("ensurepip", 1, true) or text:find("venv", 1, true) then
            hint = ("Python's venv module is missing: install it (Debian/Ubuntu: sudo apt install python%s-venv)"):format(
              version:match("^%d+%.%d+")
            )
          end
          return fail("python -m venv", lines, hint)
        end
        pip_install(false)
      end)
    end)
  end

  progress(("installing the server from %s"):format(source))
  if opts.fresh then
    vim.fn.delete(venv, "rf")
  end
  if vim.fn.executable(python) ~= 1 then
    vim.fn.delete(venv, "rf") -- a broken or partial environment
    make_venv()
    return true
  end
  -- reuse the environment while its Python still runs and is recent enough
  run({ python, "-c", VERSION_SCRIPT }, nil, function(code, lines)
    local version = code == 0 and table.concat(lines, " "):match("(%d+%.%d+%.%d+)") or nil
    if M.recent_enough(version) then
      pip_install(false)
    else
      vim.fn.delete(venv, "rf")
      make_venv()
    end
  end)
  return true
end

--- For plugin managers' build steps: installs and returns when done; raises
--- the error when the install fails. Inside a coroutine (lazy.nvim runs
--- build functions in one) it yields each step as a progress message
--- instead of blocking; elsewhere it waits with vim.wait.
---@param what string|table|nil the source as for :ScopeCacheInstall, or { source =, python =, fresh = }
function M.build(what)
  local opts = type(what) == "table" and what or { source = what }
  local messages, outcome = {}, nil
  local started = M.install({
    source = opts.source,
    python = opts.python,
    fresh = opts.fresh,
    on_progress = function(message, pip_line)
      table.insert(messages, pip_line and ("pip: " .. message) or message)
    end,
    on_done = function(ok, message)
      outcome = { ok = ok, message = message }
    end,
  })
  if not started then
    error("scopecache: an install is already running", 0)
  end
  local co, is_main = coroutine.running()
  -- LuaJIT answers nil on the main thread (Lua 5.2 semantics: the main coroutine and true)
  if co and not is_main then
    local ok_lazy, lazy_async = pcall(require, "lazy.async")
    local task = ok_lazy and type(lazy_async.running) == "function" and lazy_async.running() or nil
    while not outcome or #messages > 0 do
      local message = table.remove(messages, 1)
      if message then
        coroutine.yield(message)
      elseif task and task.sleep then
        task:sleep(50) -- lazy.nvim's own pause: the loop idles instead of resuming us at once
      else
        coroutine.yield()
      end
    end
  else
    vim.wait(30 * 60 * 1000, function()
      return outcome ~= nil
    end, 50)
  end
  if not outcome then
    error("scopecache: the install did not finish", 0)
  end
  if not outcome.ok then
    error("scopecache: " .. outcome.message, 0)
  end
  require("scopecache").on_installed()
  return outcome.message
end

return M
