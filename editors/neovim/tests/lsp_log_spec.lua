-- What the plugin and the server leave in Neovim's LSP log (lsp.log), with the
-- real server and reference service. Started by tests/e2e/test_neovim.py,
-- which passes, in the environment:
--   SCOPECACHE_SERVER_CMD  JSON list: the server command (no --log-file)
--   SCOPECACHE_ENDPOINT    the reference service's /v1 URL (TLS)
--   SCOPECACHE_WORKDIR     a scratch directory for the edited files
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/tests/?.lua;" .. package.path
vim.cmd("runtime plugin/scopecache.lua")
vim.o.showmode = false
vim.o.swapfile = false

local t = require("harness")
local editing = require("editing")
local lsp = require("scopecache.lsp")

vim.notify = function(msg)
  io.stderr:write("NOTIFY " .. tostring(msg) .. "\n")
end
-- DEBUG: every message on the wire is logged, so the specs can read what was sent.
vim.lsp.set_log_level("debug")

local workdir = assert(os.getenv("SCOPECACHE_WORKDIR"), "SCOPECACHE_WORKDIR")
assert(require("scopecache").setup({
  cmd = vim.json.decode((assert(os.getenv("SCOPECACHE_SERVER_CMD"), "SCOPECACHE_SERVER_CMD"))),
  settings = {
    endpoint = assert(os.getenv("SCOPECACHE_ENDPOINT"), "SCOPECACHE_ENDPOINT"),
    -- the server warns about this (and tells at INFO what service it found)
    transport = { verifyTls = false },
    cache = { l2 = "none" },
    speculative = { enabled = false },
  },
}), "setup() failed")

-- The corpus the reference service indexed has this line in full:
--     key, _, value = line.partition(":")
local BEFORE = { "import json", "", "", "def parse_header(line):", "    key, _, value = " }

--- The requests answered and the cancels sent, in the order lsp.log recorded them.
local function wire_events()
  local events = {}
  for _, line in ipairs(editing.lsp_log()) do
    local cancelled = line:match('"rpc%.send"\t{ jsonrpc = "2%.0", method = "%$/cancelRequest", params = { id = (%d+) } }')
    local answered = line:match('"rpc%.receive"\t{ id = (%d+), jsonrpc = "2%.0", result = ')
      or (line:find('"rpc.receive"\t{ error = ', 1, true) and line:match(', id = (%d+), jsonrpc = "2%.0" }$'))
    if cancelled then
      table.insert(events, { "cancel", tonumber(cancelled) })
    elseif answered then
      table.insert(events, { "answer", tonumber(answered) })
    end
  end
  return events
end

--- Lines of lsp.log at `level` ("ERROR", "WARN", "INFO") that contain `text`.
local function log_lines(level, text)
  return vim.tbl_filter(function(line)
    return vim.startswith(line, "[" .. level .. "]") and line:find(text, 1, true) ~= nil
  end, editing.lsp_log())
end

t.test("a request that was answered is never cancelled", function()
  local buf = editing.open(workdir .. "/answered.py", BEFORE, "python")
  editing.type_at_end(#BEFORE, "line.part")
  editing.wait_for_ghost(buf, 'ition(":")')
  -- typing on: a new request, and the answered one must be left alone
  t.feed("i", "nt")
  editing.wait_for_ghost(buf, 'tion(":")')
  t.feed("t", "nt")
  editing.wait_for_ghost(buf, 'ion(":")')
  t.feed("<Esc>", "nt")
  local answered = {}
  local events = wire_events()
  for _, event in ipairs(events) do
    if event[1] == "answer" then
      answered[event[2]] = true
    else
      t.truthy(not answered[event[2]], ("request %d was cancelled after its answer: %s"):format(event[2], vim.inspect(events)))
    end
  end
  t.truthy(#vim.tbl_keys(answered) >= 3, "three answers read from lsp.log: " .. vim.inspect(events))
  t.eq({}, log_lines("ERROR", "Cannot find request with id"), "lsp.log errors")
end)

t.test("the server's INFO records are INFO in lsp.log, its warnings WARN, and nothing is an error", function()
  local info = t.wait_for("the service identification at INFO", function()
    return log_lines("INFO", "transport.http: completion service at ")[1]
  end, 15000)
  t.truthy(info:find("handlers.lua", 1, true), info) -- filed by Neovim's window/logMessage handler
  t.wait_for("the TLS warning at WARN", function()
    return log_lines("WARN", "TLS certificate verification is OFF")[1]
  end, 15000)
  t.eq({}, log_lines("ERROR", ""), "lsp.log errors")
  local stderr = vim.tbl_filter(function(line)
    return line:find('"stderr"', 1, true) ~= nil
  end, editing.lsp_log())
  t.eq({}, stderr, "server stderr in lsp.log")
end)

t.after = function()
  vim.lsp.stop_client(vim.lsp.get_clients({ name = lsp.name }), true)
end

t.run()
