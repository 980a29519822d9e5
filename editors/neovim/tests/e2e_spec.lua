-- End to end in headless Neovim: the real scopecache server and reference
-- completion service. Started by tests/e2e/test_neovim.py (or tests/run.sh),
-- which passes, in the environment:
--   SCOPECACHE_SERVER_CMD  JSON list: the server command
--   SCOPECACHE_ENDPOINT    the reference service's /v1 URL
--   SCOPECACHE_CA_FILE     its CA certificate
--   SCOPECACHE_WORKDIR     a scratch directory for the edited files
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/tests/?.lua;" .. package.path
vim.cmd("runtime plugin/scopecache.lua")
vim.o.showmode = false
vim.o.swapfile = false

local t = require("harness")

-- Messages go to stderr (the test log): an error message from the server while
-- a command runs (:checkhealth) would otherwise abort that command here.
local notices = {}
vim.notify = function(msg, level)
  table.insert(notices, { msg = msg, level = level })
  io.stderr:write("NOTIFY " .. tostring(msg) .. "\n")
end
local lsp = require("scopecache.lsp")
local ghost = require("scopecache.ghost")

local workdir = assert(os.getenv("SCOPECACHE_WORKDIR"), "SCOPECACHE_WORKDIR")
local settings = {
  endpoint = assert(os.getenv("SCOPECACHE_ENDPOINT"), "SCOPECACHE_ENDPOINT"),
  provider = "openai",
  model = "m",
  transport = { caFile = os.getenv("SCOPECACHE_CA_FILE") },
  cache = { l2 = "none" },
  -- upstream requests are compared exactly below; prefetch has its own tests
  speculative = { enabled = false },
  -- accepted text is counted 1 s and 2 s after an accept (30 s and 120 s by default)
  acceptance = { shortWindowSeconds = 1, longWindowSeconds = 2 },
}
local started = require("scopecache").setup({
  cmd = vim.json.decode((assert(os.getenv("SCOPECACHE_SERVER_CMD"), "SCOPECACHE_SERVER_CMD"))),
  settings = settings,
})
assert(started, "setup() failed")

-- The corpus the reference service indexed has this line in full:
--     key, _, value = line.partition(":")
local BEFORE = { "import json", "", "", "def parse_header(line):", "    key, _, value = " }
local TYPED = "line.part"
local GHOST = 'ition(":")'
local ACCEPTED = '    key, _, value = line.partition(":")'

--- Opens a new Python file with BEFORE as its text and waits for the server.
local function open_python(name)
  vim.cmd("edit " .. vim.fn.fnameescape(workdir .. "/" .. name))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE)
  vim.bo[buf].filetype = "python"
  t.wait_for("the server to attach", function()
    local client = lsp.client(buf)
    return client and client.initialized
  end, 30000)
  return buf
end

local function ghost_text(buf)
  local marks = vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  local mark = marks[1]
  if not mark or not mark[4].virt_text then
    return nil
  end
  return mark[4].virt_text[1][1]
end

-- And a Go file with this line:
--     key, value, _ := strings.Cut(line, ":")
local BEFORE_GO = {
  "package headers",
  "",
  'import "strings"',
  "",
  "func ParseHeader(line string) (string, string) {",
  "\tkey, value, _ := ",
}
local TYPED_GO = "strings.C"
local GHOST_GO = 'ut(line, ":")'

--- Opens a new Go file with BEFORE_GO as its text and waits for the server.
local function open_go(name)
  vim.cmd("edit " .. vim.fn.fnameescape(workdir .. "/" .. name))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE_GO)
  vim.bo[buf].filetype = "go"
  t.wait_for("the server to attach to the Go buffer", function()
    local client = lsp.client(buf)
    return client and client.initialized
  end, 30000)
  return buf
end

local function type_at_end_of_last_line(text, lines)
  vim.api.nvim_win_set_cursor(0, { lines or #BEFORE, 0 })
  t.feed("A", "nt")
  t.wait_for("insert mode", function()
    return vim.api.nvim_get_mode().mode == "i"
  end)
  t.feed(text, "nt")
end

local function stats_now()
  local result
  require("scopecache").stats(function(stats)
    result = stats
  end)
  return t.wait_for("scopecache/stats", function()
    return result
  end)
end

--- What settles once no request runs: the counts of requests and their ends.
local function request_counts(stats)
  return {
    requests = stats.requests,
    upstreamRequests = stats.upstreamRequests,
    upstreamCompleted = stats.upstreamCompleted,
    upstreamCancelled = stats.upstreamCancelled,
    inflight = stats.inflight,
    served = stats.served,
  }
end

--- Stats once no request runs (one after an accept may still be running): nothing in
--- flight upstream and the counts the same in two answers in a row. Fails, saying
--- what it last saw, when they have not settled within 10 s.
local function settled_stats()
  local deadline = vim.loop.now() + 10000
  local last = stats_now()
  while true do
    t.sleep(100)
    local now = stats_now()
    if now.inflight == 0 and vim.deep_equal(request_counts(now), request_counts(last)) then
      return now
    end
    if vim.loop.now() > deadline then
      error("scopecache/stats did not settle within 10 s: " .. vim.inspect(request_counts(now)), 2)
    end
    last = now
  end
end

local function hits(stats)
  return (stats.served.exact or 0) + (stats.served.typed or 0) + (stats.served.l2 or 0)
end

t.test("ghost text appears while typing and Tab accepts it", function()
  local buf = open_python("first.py")
  type_at_end_of_last_line(TYPED)
  t.eq(GHOST, t.wait_for("ghost text", function()
    return ghost_text(buf)
  end, 20000), "ghost text")
  t.feed("<Tab>", "mt")
  t.wait_for("the accepted line", function()
    return vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] == ACCEPTED
  end, 5000)
  t.eq(nil, ghost_text(buf), "ghost text after accept")
  t.eq({ #BEFORE, #ACCEPTED }, vim.api.nvim_win_get_cursor(0), "cursor after accept")
  t.feed("<Esc>", "nt")
end)

t.test("the same context in another buffer is served from the cache", function()
  local before = settled_stats()
  t.truthy(before.upstreamRequests >= 1, "one upstream request so far")
  local buf = open_python("second.py")
  type_at_end_of_last_line(TYPED)
  t.eq(GHOST, t.wait_for("ghost text", function()
    return ghost_text(buf)
  end, 20000), "ghost text")
  local after = stats_now()
  t.eq(before.upstreamRequests, after.upstreamRequests, "upstream requests")
  t.truthy(hits(after) > hits(before), "a cache hit: " .. vim.inspect(after.served))
  t.feed("<Esc>", "nt")
end)

t.test("ghost text appears in a Go file too, with the default filetypes", function()
  local buf = open_go("headers.go")
  type_at_end_of_last_line(TYPED_GO, #BEFORE_GO)
  t.eq(GHOST_GO, t.wait_for("ghost text in Go", function()
    return ghost_text(buf)
  end, 20000), "ghost text in Go")
  t.feed("<Esc>", "nt")
  local languages = stats_now().languages
  t.truthy(languages.go and languages.go.parsed == 1, vim.inspect(languages))
end)

--- The acceptance counts of one source (zeros before it showed anything); `settled`: once
--- every earlier accept's windows are counted.
local function accepted_by(source, settled)
  local acceptance = stats_now().acceptance
  if settled then
    acceptance = t.wait_for("earlier accepts to be counted", function()
      local now = stats_now().acceptance
      return now.pending == 0 and now
    end)
  end
  local counts = acceptance.bySource[source] or {}
  return {
    accepted = counts.accepted or 0,
    chars = counts.acceptedChars or 0,
    kept = counts.retainedChars30s or 0,
    counted = counts.measuredChars30s or 0,
    kinds = acceptance.byKind,
  }
end

--- The visible suggestion once its text is `text` (or passes `check`).
local function suggestion_is(buf, what, check)
  return t.wait_for(what, function()
    local s = ghost.current(buf)
    return s and check(s.text) and s
  end, 20000)
end

t.test("line, word and Tab accepts are each counted with their source and characters", function()
  local buf = open_python("accepts.py")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "import json", "", "", "def parse_header(line):", "" })
  -- the start of the function's body: a suggestion of two lines
  type_at_end_of_last_line("    ")
  local s = suggestion_is(buf, "a two-line suggestion", function(text)
    return text:find("\n", 1, true) ~= nil
  end)
  local source = s.command.arguments[2].source
  local text = s.text
  local before = accepted_by(source, true)
  local first_line = text:match("^[^\n]*")
  t.feed("<M-l>", "mt")
  suggestion_is(buf, "the rest after a line accept", function(rest)
    return rest == text:sub(#first_line + 1)
  end)
  local after_line = t.wait_for("the line accept to be counted", function()
    local now = accepted_by(source)
    return now.kinds.line == before.kinds.line + 1 and now
  end)
  t.eq(before.accepted + 1, after_line.accepted, "accepted suggestions after the line accept")
  t.eq(before.chars + #first_line, after_line.chars, "accepted characters after the line accept")
  t.feed("<M-Right>", "mt") -- the line break and the indentation
  t.feed("<M-Right>", "mt") -- "return"
  local rest = suggestion_is(buf, "the rest after two word accepts", function(left)
    return left:sub(1, 1) == " "
  end).text
  local after_words = t.wait_for("the word accepts to be counted", function()
    local now = accepted_by(source)
    return now.kinds.word == before.kinds.word + 2 and now
  end)
  t.eq(before.accepted + 1, after_words.accepted, "one suggestion, accepted in parts")
  t.eq(before.chars + #text - #rest, after_words.chars, "accepted characters after the words")
  t.feed("<Tab>", "mt")
  local after_tab = t.wait_for("the Tab accept to be counted", function()
    local now = accepted_by(source)
    return now.kinds.full == before.kinds.full + 1 and now
  end)
  t.eq(before.chars + #text, after_tab.chars, "the whole suggestion accepted")
  t.eq("    " .. first_line, vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1])
  t.feed("<Esc>", "nt")
  -- left alone, every accepted character is still there after the short window
  local kept = t.wait_for("the short window to be counted", function()
    local now = accepted_by(source)
    return now.counted >= before.counted + #text and now
  end)
  t.eq(before.kept + #text, kept.kept, "kept characters")
end)

t.test("deleting half of an accepted line before the short window keeps half", function()
  local buf = open_python("retained.py")
  type_at_end_of_last_line(TYPED)
  local s = suggestion_is(buf, "ghost text", function(text)
    return text == GHOST
  end)
  local source = s.command.arguments[2].source
  local before = accepted_by(source, true)
  t.feed("<Tab>", "mt")
  t.wait_for("the accepted line", function()
    return vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] == ACCEPTED
  end, 5000)
  t.feed("<Esc>", "nt")
  local half = math.floor(#GHOST / 2)
  vim.api.nvim_buf_set_text(buf, 4, #ACCEPTED - #GHOST + half, 4, #ACCEPTED, {})
  local after = t.wait_for("the short window to be counted", function()
    local now = accepted_by(source)
    return now.counted >= before.counted + #GHOST and now
  end)
  t.eq(before.chars + #GHOST, after.chars, "accepted characters")
  t.eq(before.kept + half, after.kept, "kept characters")
end)

t.test(":ScopeCacheStats shows the hit in a floating window", function()
  vim.cmd("ScopeCacheStats")
  local win = t.wait_for("the stats window", function()
    local cfg = vim.api.nvim_win_get_config(0)
    return cfg.relative ~= "" and vim.api.nvim_get_current_win()
  end, 5000)
  local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
  local text = table.concat(lines, "\n")
  t.truthy(text:match("hit ratio   %d+%% of %d+ served"), text)
  local exact = tonumber(text:match("exact (%d+)")) or 0
  local typed = tonumber(text:match("typed (%d+)")) or 0
  t.truthy(exact + typed >= 1, text)
  t.truthy(text:match("upstream    1 requests") or text:match("upstream    %d+ requests"), text)
  -- and what was accepted and kept
  t.truthy(text:match("accepted    %d+ of %d+ shown %(%d+%%%), %d+ chars; full %d+, word 2, line 1"), text)
  t.truthy(text:match("kept        %d+%% after 1s"), text)
  vim.api.nvim_win_close(win, true)
end)

--- The :checkhealth scopecache report as text.
local function checkhealth()
  vim.cmd("checkhealth scopecache")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

--- New server settings; waits until the server has them (its health answer shows the endpoint).
local function switch_settings(new)
  require("scopecache").update_settings(new)
end

t.test(":checkhealth scopecache is green when a completion goes through", function()
  local text = checkhealth()
  t.truthy(text:find("server command found", 1, true), text)
  t.truthy(text:find("server running", 1, true), text)
  t.truthy(text:find("settings valid (checked by the server)", 1, true), text)
  t.truthy(text:find("TLS: transport.caFile " .. settings.transport.caFile, 1, true), text)
  t.truthy(text:find("completion request answered in", 1, true), text)
  t.truthy(not text:find("ERROR", 1, true), text)
end)

t.test(":checkhealth scopecache is red without a caFile against the TLS service and names the fix", function()
  switch_settings(vim.tbl_deep_extend("force", settings, { transport = { caFile = vim.NIL } }))
  local text = checkhealth()
  t.truthy(text:find("completion request failed (tls)", 1, true), text)
  t.truthy(text:find("set transport.caFile", 1, true), text)
end)

t.test(":checkhealth scopecache is red with a missing CA file", function()
  local missing = workdir .. "/no-such-ca.pem"
  switch_settings(vim.tbl_deep_extend("force", settings, { transport = { caFile = missing } }))
  local text = checkhealth()
  t.truthy(text:find("TLS: transport.caFile " .. missing .. " is missing", 1, true), text)
  t.truthy(text:find("completion request failed (config)", 1, true), text)
end)

t.test(":checkhealth scopecache is red with a wrong endpoint and lists every settings problem", function()
  local wrong = settings.endpoint:gsub("/v1$", "/api")
  switch_settings(vim.tbl_deep_extend("force", settings, {
    endpoint = wrong,
    enpoint = settings.endpoint,
    cache = { policy = "fifo", capacity = -1 },
  }))
  local text = checkhealth()
  t.truthy(text:find("completion request failed (status)", 1, true), text)
  t.truthy(text:find("/v1", 1, true), text)
  t.truthy(text:find("setting enpoint: unknown setting", 1, true), text)
  t.truthy(text:find("setting cache.policy", 1, true), text)
  t.truthy(text:find("setting cache.capacity", 1, true), text)
  switch_settings(settings)
  t.truthy(not checkhealth():find("ERROR", 1, true), "green again with the right settings")
end)

t.test(":ScopeCacheClear empties the cache", function()
  vim.cmd("ScopeCacheClear")
  t.wait_for("an empty cache", function()
    return stats_now().cache.size == 0
  end, 5000)
end)

t.test(":ScopeCacheToggle turns suggestions off and on again", function()
  vim.cmd("ScopeCacheToggle")
  t.eq(false, require("scopecache").is_enabled(), "enabled after one toggle")
  local before = settled_stats()
  local buf = open_python("toggled.py")
  type_at_end_of_last_line(TYPED)
  t.wait_for("the typed text", function()
    return vim.api.nvim_get_current_line():find(TYPED, 1, true)
  end)
  t.eq(before.requests, stats_now().requests, "requests while off")
  t.eq(nil, ghost_text(buf), "ghost text while off")
  t.feed("<Esc>", "nt")
  vim.cmd("ScopeCacheToggle")
  t.eq(true, require("scopecache").is_enabled(), "enabled after two toggles")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE)
  type_at_end_of_last_line(TYPED)
  t.eq(GHOST, t.wait_for("ghost text", function()
    return ghost_text(buf)
  end, 20000), "ghost text when on again")
  t.feed("<Esc>", "nt")
  vim.cmd("ScopeCacheDisable")
  t.eq(false, require("scopecache").is_enabled(), "after :ScopeCacheDisable")
  vim.cmd("ScopeCacheEnable")
  t.eq(true, require("scopecache").is_enabled(), "after :ScopeCacheEnable")
end)

t.test(":ScopeCacheRestart starts a new server that serves the open buffer", function()
  local buf = vim.api.nvim_get_current_buf()
  local old = t.truthy(lsp.client(buf), "a client before the restart")
  local old_id = old.id
  vim.cmd("ScopeCacheRestart")
  local new = t.wait_for("a new client attached to the buffer", function()
    local client = lsp.client(buf)
    return client and client.id ~= old_id and client.initialized and client
  end, 30000)
  t.truthy(old.is_stopped and old:is_stopped(), "the old client stopped")
  t.eq(1, #lsp.clients(), "clients after the restart")
  t.eq(0, stats_now().requests, "a fresh server has no requests yet")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE)
  type_at_end_of_last_line(TYPED)
  t.eq(GHOST, t.wait_for("ghost text from the new server", function()
    return ghost_text(buf)
  end, 20000), "ghost text")
  t.feed("<Esc>", "nt")
  t.truthy(new.id ~= old_id)
  t.truthy(vim.tbl_contains(vim.tbl_map(function(n)
    return n.msg
  end, notices), "scopecache: server restarted"), "told of the restart")
end)

t.after = function()
  vim.lsp.stop_client(vim.lsp.get_clients({ name = lsp.name }), true)
end

t.run()
