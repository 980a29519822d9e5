-- :checkhealth scopecache: Neovim version, plugin options, which server starts
-- (setup()'s cmd, scopecache on PATH, or the one :ScopeCacheInstall installed,
-- with its version), the Python an install would use, and the server's own
-- verdict (scopecache/health): every settings problem it found, which
-- completion server it uses (the endpoint setting, or the one it found on
-- 127.0.0.1, or none found and the setting to set), the TLS/CA file state,
-- and one real completion request through its transport, with the fix it
-- names when that fails.
local config = require("scopecache.config")

local M = {}

-- 0.10 renamed the report functions; keep both spellings working. Before 0.8
-- they live in the "health" module: :checkhealth must still say "too old" there.
local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

--- How long :checkhealth waits for the server's answer (its probe stops after 10 s).
M.TIMEOUT_MS = 15000

--- The server's scopecache/health answer, or nil and a message.
function M.ask(client, timeout_ms)
  local answer, err
  if vim.fn.has("nvim-0.11") == 1 then
    answer, err = client:request_sync("scopecache/health", {}, timeout_ms or M.TIMEOUT_MS, 0)
  else
    answer, err = client.request_sync("scopecache/health", {}, timeout_ms or M.TIMEOUT_MS, 0)
  end
  if not answer then
    return nil, tostring(err or "the server did not answer")
  end
  if answer.err then
    return nil, answer.err.message or vim.inspect(answer.err)
  end
  return answer.result
end

--- What to write in init.lua to name a server (the advice when none was found).
M.ENDPOINT_ADVICE = {
  "start one: llama-server --fim-qwen-1.5b-default (it listens on 8012), or Ollama",
  'or name it: setup({ settings = { endpoint = "http://127.0.0.1:8080" } })',
}

--- Reports which completion server is used; returns true when that says all
--- there is to say about completions being off (nothing found, or loading).
function M.report_discovery(discovery)
  if type(discovery) ~= "table" then
    return false
  end
  local message = tostring(discovery.message or discovery.state)
  if discovery.state == "found" then
    ok("completion server " .. message)
  elseif discovery.state == "loading" then
    info(message)
    return true
  elseif discovery.state == "searching" then
    info(message)
    return true
  elseif discovery.state == "none" or discovery.state == "off" then
    warn(message, M.ENDPOINT_ADVICE)
    return true
  end
  return false
end

--- Reports a scopecache/health answer.
function M.report(verdict)
  local problems = verdict.settingsProblems or {}
  if #problems == 0 then
    ok("settings valid (checked by the server)")
  end
  for _, problem in ipairs(problems) do
    error("setting " .. problem, { "correct or remove it in setup({ settings = ... })" })
  end
  if verdict.endpoint ~= nil and verdict.endpoint ~= vim.NIL then
    info(("endpoint: %s (provider %s)"):format(verdict.endpoint, tostring(verdict.provider)))
  end
  local tls = verdict.tls or {}
  if tls.used then
    local status = tls.caFileStatus
    if status == "not set" then
      info("TLS: trusting the system CA roots (no transport.caFile)")
    elseif status == "ok" then
      ok("TLS: transport.caFile " .. tostring(tls.caFile))
    else
      error(("TLS: transport.caFile %s is %s"):format(tostring(tls.caFile), tostring(status)))
    end
    if tls.verify == false then
      warn("TLS: certificate verification is off (transport.verifyTls = false)")
    end
  end
  local upstream = verdict.upstream or {}
  local fix = upstream.fix ~= vim.NIL and upstream.fix or nil
  if M.report_discovery(verdict.discovery) and upstream.status == "off" then
    return
  end
  if upstream.status == "ok" then
    ok(("completion request answered in %d ms: %s"):format(math.floor(tonumber(upstream.latencyMs) or 0), upstream.message or ""))
  elseif upstream.status == "off" then
    warn(upstream.message or "completions are off", fix and { fix } or nil)
  else
    error(
      ("completion request failed (%s): %s"):format(tostring(upstream.kind), tostring(upstream.message)),
      fix and { fix } or nil
    )
  end
end

--- Which server starts: setup()'s cmd, scopecache on PATH, or the installed
--- one (with its version). Returns whether there is one.
function M.report_server(opts, cmd_given)
  local install = require("scopecache.install")
  local exe = opts.cmd[1]
  if cmd_given then
    if vim.fn.executable(exe) == 1 then
      ok(("server command found: %s"):format(vim.fn.exepath(exe)))
      return true
    end
    error(("server command not found: %s"):format(exe), {
      "correct cmd in setup(), or leave it out to use scopecache from PATH or the one :ScopeCacheInstall installs",
    })
    return false
  end
  local on_path = vim.fn.executable(exe) == 1
  if on_path then
    ok(("server command found: %s (on PATH)"):format(vim.fn.exepath(exe)))
  end
  if not install.installed() then
    if not on_path then
      error("server not installed: no scopecache on PATH and none installed by :ScopeCacheInstall", {
        (":ScopeCacheInstall installs it into %s (it needs Python %d.%d+)"):format(
          install.venv(),
          install.MIN_PYTHON[1],
          install.MIN_PYTHON[2]
        ),
        "or pip install scopecache where PATH finds it, or set cmd in setup()",
      })
    end
    return on_path
  end
  local version, why = install.installed_version()
  if not version then
    local report = on_path and warn or error
    report(("the server :ScopeCacheInstall installed does not run: %s"):format(why), {
      ":ScopeCacheInstall! installs it again in a fresh environment",
    })
    return on_path
  end
  local where = ("scopecache %s in %s"):format(version, install.venv())
  if on_path then
    info(("also installed by :ScopeCacheInstall (not used while scopecache is on PATH): %s"):format(where))
  else
    ok(("server installed by :ScopeCacheInstall: %s"):format(where))
  end
  return true
end

--- The Python :ScopeCacheInstall would use (an error when none is found and no server is there).
function M.report_python(has_server)
  local install = require("scopecache.install")
  local python, found = install.find_python_now()
  if python then
    ok(("Python %s for :ScopeCacheInstall: %s"):format(found, python))
  else
    local report = has_server and warn or error
    report(install.no_python_message(found))
  end
end

--- The endpoint in the settings, when the server cannot be asked.
function M.report_endpoint(settings)
  local endpoint = type(settings) == "table" and settings.endpoint or nil
  if type(endpoint) == "string" and endpoint ~= "" then
    info(("endpoint: %s (checked once the server runs)"):format(endpoint))
  else
    local discovery = type(settings) == "table" and settings.discovery or nil
    if type(discovery) == "table" and discovery.enabled == false then
      warn("no endpoint in the settings and discovery.enabled is false: completions stay off", M.ENDPOINT_ADVICE)
    else
      info("no endpoint in the settings: the server looks for a completion server on 127.0.0.1 (discovery.ports)")
    end
  end
end

function M.check()
  local opts = config.options
  start("scopecache")
  local version_text = require("scopecache").version_text()
  if vim.fn.has("nvim-0.8") == 1 then
    ok("Neovim " .. version_text)
  else
    error("Neovim " .. version_text .. " is too old: scopecache needs 0.8 or newer")
    return -- nothing else can work there
  end
  if vim.fn.has("nvim-0.12") == 1 and vim.lsp.inline_completion then
    info("ghost text: Neovim's built-in inline completion")
  else
    info("ghost text: drawn by scopecache (extmarks in namespace 'scopecache', highlight ScopeCacheGhost)")
  end

  for _, line in ipairs(config.unknown(config.state.given)) do
    warn(line)
  end
  local problems = config.check(opts)
  for _, problem in ipairs(problems) do
    error("option " .. problem)
  end
  if #problems > 0 then
    return
  end
  if not config.state.setup then
    warn("setup() has not run", { 'call require("scopecache").setup({...}) in your init.lua' })
  end
  if config.state.enabled then
    ok("suggestions on")
  else
    warn("suggestions off", { ":ScopeCacheEnable (or :ScopeCacheToggle) turns them on" })
  end

  local has_server = M.report_server(opts, config.state.given ~= nil and config.state.given.cmd ~= nil)
  M.report_python(has_server)

  local client = require("scopecache.lsp").client()
  if not client then
    warn(
      "server not running: settings and completions not checked",
      { ("open a %s buffer, then run :checkhealth scopecache again"):format(table.concat(opts.filetypes, "/")) }
    )
    M.report_endpoint(opts.settings)
    return
  end
  local server_info = client.server_info or (client.initialize_result or {}).serverInfo or {}
  ok(("server running: %s %s"):format(server_info.name or "scopecache", server_info.version or "(version not reported)"))

  local verdict, err = M.ask(client)
  if not verdict then
    error("the server's health check failed: " .. err, { ":ScopeCacheRestart, or update scopecache" })
    return
  end
  M.report(verdict)
end

return M
