-- scopecache/stats and scopecache/clearCache: requests, formatting and the
-- floating window of :ScopeCacheStats.
local lsp = require("scopecache.lsp")

local M = {}

local SOURCES = { "exact", "typed", "inflight", "l2", "upstream", "speculative" }

local function n(value)
  return type(value) == "number" and value or 0
end

--- Share of served suggestions that needed no upstream call of their own (nil before any).
function M.hit_ratio(stats)
  local total = 0
  for _, count in pairs(stats.served or {}) do
    total = total + n(count)
  end
  if total == 0 then
    return nil, 0
  end
  return (total - n((stats.served or {}).upstream)) / total, total
end

local function ms(value)
  return type(value) == "number" and ("%.1f ms"):format(value) or "-"
end

local function percent(part, whole)
  return n(whole) > 0 and ("%d%%"):format(math.floor(100 * n(part) / n(whole) + 0.5)) or "-"
end

--- What the developer accepted and kept (stats.acceptance), as display lines; none before
--- anything was shown.
---@return string[]
function M.acceptance_lines(stats)
  local a = stats.acceptance
  if type(a) ~= "table" or n(a.shown) == 0 then
    return {}
  end
  local windows = type(a.windowsSeconds) == "table" and a.windowsSeconds or { 30, 120 }
  local kinds = a.byKind or {}
  local lines = {
    ("accepted    %d of %d shown (%s), %d chars; full %d, word %d, line %d"):format(
      n(a.accepted), n(a.shown), percent(a.accepted, a.shown), n(a.acceptedChars),
      n(kinds.full), n(kinds.word), n(kinds.line)
    ),
    ("kept        %s after %gs, %s after %gs (of the accepted chars counted)"):format(
      percent(a.retainedChars30s, a.measuredChars30s), n(windows[1]),
      percent(a.retainedChars120s, a.measuredChars120s), n(windows[2])
    ),
    ("typed       %d typed through by hand (never accepted, half a first line or more)"):format(
      n(a.typedThrough)
    ),
  }
  local muted = {}
  for _, source in ipairs(a.mutedSources or {}) do
    muted[source] = true
  end
  local sources = vim.tbl_keys(a.bySource or {})
  table.sort(sources)
  for _, source in ipairs(sources) do
    local c = a.bySource[source]
    table.insert(lines, ("  %-11s %d shown, %d accepted (%s), %d chars, kept %s / %s%s"):format(
      source, n(c.shown), n(c.accepted), percent(c.accepted, c.shown), n(c.acceptedChars),
      percent(c.retainedChars30s, c.measuredChars30s),
      percent(c.retainedChars120s, c.measuredChars120s),
      muted[source] and " (muted)" or ""
    ))
  end
  return lines
end

--- The stats as display lines.
---@return string[]
function M.format(stats)
  local ratio, total = M.hit_ratio(stats)
  local served = stats.served or {}
  local parts = {}
  for _, source in ipairs(SOURCES) do
    if served[source] ~= nil then
      table.insert(parts, ("%s %d"):format(source, n(served[source])))
    end
  end
  for source, count in pairs(served) do
    if not vim.tbl_contains(SOURCES, source) then
      table.insert(parts, ("%s %d"):format(source, n(count)))
    end
  end
  local latency = stats.latencyMs or {}
  local cache = stats.cache or {}
  local transport = stats.transport or {}
  local lines = {
    "scopecache",
    ("hit ratio   %s of %d served"):format(ratio and ("%d%%"):format(math.floor(ratio * 100 + 0.5)) or "-", total),
    "served      " .. (#parts > 0 and table.concat(parts, ", ") or "none yet"),
    ("requests    %d (cancelled %d)"):format(n(stats.requests), n(stats.cancelled)),
    ("upstream    %d requests, %d errors"):format(n(stats.upstreamRequests), n(stats.upstreamErrors)),
    ("latency     p50 %s, p95 %s, p99 %s"):format(ms(latency.p50), ms(latency.p95), ms(latency.p99)),
    ("cache       %s, %d of %d entries"):format(tostring(cache.policy or "?"), n(cache.size), n(cache.capacity)),
    ("transport   %d DNS lookups, %d connections opened"):format(
      n(transport.dnsLookups),
      n(transport.connectionsOpened)
    ),
  }
  return vim.list_extend(lines, M.acceptance_lines(stats))
end

local function with_client(method, callback)
  local client = lsp.client()
  if not client then
    vim.notify("scopecache: the server is not running (open a file it handles)", vim.log.levels.WARN)
    return
  end
  lsp.request(client, method, {}, function(err, result)
    if err then
      vim.notify(("scopecache: %s failed: %s"):format(method, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    callback(result)
  end)
end

--- Calls callback(stats) with the server's stats.
function M.fetch(callback)
  with_client("scopecache/stats", callback)
end

--- Opens a floating window with `lines`; q or <Esc> closes it. Returns buf, win.
function M.open_float(lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "scopecache-stats"
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  local config = {
    relative = "editor",
    width = math.min(width + 2, vim.o.columns - 4),
    height = #lines,
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 1),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    style = "minimal",
    border = "rounded",
  }
  if vim.fn.has("nvim-0.9") == 1 then
    config.title = " scopecache stats "
  end
  local win = vim.api.nvim_open_win(buf, true, config)
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, "<Cmd>close<CR>", { buffer = buf, nowait = true, silent = true })
  end
  return buf, win
end

--- :ScopeCacheStats
function M.show()
  M.fetch(function(stats)
    M.open_float(M.format(stats))
  end)
end

--- :ScopeCacheClear
function M.clear()
  with_client("scopecache/clearCache", function(result)
    vim.notify(("scopecache: cleared %d cache entries"):format(n(result and result.cleared)))
  end)
end

return M
