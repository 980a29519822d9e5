-- :checkhealth scopecache: Neovim version, server command, server version,
-- settings and whether the completion endpoint accepts connections.
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

--- host and port of an http(s) URL.
function M.host_port(url)
  local scheme, rest = url:match("^(https?)://([^/]+)")
  if not scheme then
    return nil
  end
  local host, port = rest:match("^%[(.+)%]:?(%d*)$")
  if not host then
    host, port = rest:match("^([^:]+):?(%d*)$")
  end
  port = tonumber(port) or (scheme == "https" and 443 or 80)
  return host, port
end

--- Tries a TCP connection; returns true or false, message.
function M.reachable(host, port, timeout_ms)
  local uv = vim.loop
  local addresses = uv.getaddrinfo(host, tostring(port), { socktype = "stream" })
  if not addresses or #addresses == 0 then
    return false, "cannot resolve " .. host
  end
  local tcp = uv.new_tcp()
  local done, result, message = false, false, nil
  tcp:connect(addresses[1].addr, port, function(err)
    done, result, message = true, err == nil, err
  end)
  vim.wait(timeout_ms or 2000, function()
    return done
  end, 20)
  tcp:close()
  if not done then
    return false, "timed out"
  end
  return result, message
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
    info("ghost text: drawn by scopecache (extmarks in namespace 'scopecache')")
  end

  local problems = config.check(opts)
  for _, problem in ipairs(problems) do
    error("option " .. problem)
  end
  if #problems > 0 then
    return
  end

  local exe = opts.cmd[1]
  if vim.fn.executable(exe) == 1 then
    ok(("server command found: %s"):format(vim.fn.exepath(exe)))
  else
    error(("server command not found: %s"):format(exe), { "pip install scopecache, or set cmd in setup()" })
  end

  local client = require("scopecache.lsp").client()
  if client then
    local server_info = client.server_info or (client.initialize_result or {}).serverInfo or {}
    ok(("server running: %s %s"):format(server_info.name or "scopecache", server_info.version or "(version not reported)"))
  else
    info("server not running yet (it starts with the first " .. table.concat(opts.filetypes, "/") .. " buffer)")
  end

  local setting_problems = config.check_settings(opts.settings)
  if #setting_problems == 0 then
    ok("settings valid")
  end
  for _, problem in ipairs(setting_problems) do
    error("setting " .. problem)
  end

  local endpoint = opts.settings.endpoint
  if type(endpoint) ~= "string" then
    warn("no endpoint set: the server runs but completes nothing", { "set settings.endpoint in setup()" })
    return
  end
  local host, port = M.host_port(endpoint)
  if not host then
    return
  end
  local reached, message = M.reachable(host, port, 2000)
  if reached then
    ok(("endpoint reachable: %s:%d"):format(host, port))
  else
    error(("endpoint not reachable: %s:%d (%s)"):format(host, port, tostring(message)))
  end
end

return M
