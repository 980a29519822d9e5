-- Unit tests that need Neovim but no server: run with
--   nvim --headless -u NONE -c "luafile tests/unit_spec.lua"   (from editors/neovim)
-- or through tests/run.sh.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/tests/?.lua;" .. package.path

vim.o.showmode = false
local t = require("harness")
local ghost = require("scopecache.ghost")
local stats = require("scopecache.stats")
local config = require("scopecache.config")

t.test("a word accept takes the next identifier with its leading space", function()
  t.eq(" value", ghost.portion(" value = line", "word"))
  t.eq('(":")', ghost.portion('(":") + x', "word"))
  t.eq("    \n  ", ghost.portion("    \n  x", "word"))
end)

t.test("a line accept takes the rest of the current line only", function()
  t.eq("return a", ghost.portion("return a\n    b", "line"))
  t.eq("\n    b", ghost.portion("\n    b\nc", "line"))
end)

t.test("a suggestion whose range covers typed text shows only the rest", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "x = line.part" })
  local item = {
    insertText = 'line.partition(":")',
    range = { start = { line = 0, character = 4 }, ["end"] = { line = 0, character = 13 } },
    command = { command = "scopecache.accepted", arguments = { "id-1" } },
  }
  local s = ghost.suggestion(buf, item, "utf-16", 0, 13)
  t.eq('ition(":")', s.text)
  t.eq("id-1", s.command.arguments[1])
end)

t.test("a suggestion that contradicts what was typed is not shown", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "x = lime" })
  local item = { insertText = "line.strip()", range = { start = { line = 0, character = 4 }, ["end"] = { line = 0, character = 8 } } }
  t.eq(nil, ghost.suggestion(buf, item, "utf-16", 0, 8))
end)

t.test("utf-16 ranges are converted to byte columns", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { 's = "é" + na' })
  -- "é" is 1 UTF-16 unit but 2 bytes: character 10 is byte 11
  local item = { insertText = "name", range = { start = { line = 0, character = 10 }, ["end"] = { line = 0, character = 12 } } }
  t.eq("me", ghost.suggestion(buf, item, "utf-16", 0, 13).text)
end)

t.test("multi-line ghost text is drawn as virtual text plus virtual lines", function()
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "def f():" })
  ghost.render(buf, { row = 0, col = 8, text = "\n    return 1\n" }, "Comment")
  local marks = vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  t.eq(1, #marks)
  t.eq("", marks[1][4].virt_text[1][1])
  t.eq("    return 1", marks[1][4].virt_lines[1][1][1])
  ghost.clear(buf)
  t.eq(0, #vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, {}))
end)

t.test("the ghost namespace is called scopecache", function()
  t.eq(ghost.ns, vim.api.nvim_get_namespaces().scopecache)
end)

t.test("stats are formatted with the hit ratio and every source", function()
  local lines = stats.format({
    requests = 4,
    served = { exact = 1, typed = 1, inflight = 0, l2 = 0, upstream = 2, speculative = 0 },
    upstreamRequests = 2,
    upstreamErrors = 0,
    cancelled = 1,
    latencyMs = { p50 = 0.5, p95 = 30, p99 = 31 },
    cache = { policy = "hybrid", capacity = 2048, size = 2 },
    transport = { dnsLookups = 1, connectionsOpened = 1 },
  })
  local text = table.concat(lines, "\n")
  t.truthy(text:find("hit ratio   50%% of 4 served"), text)
  t.truthy(text:find("exact 1, typed 1, inflight 0, l2 0, upstream 2, speculative 0", 1, true), text)
  t.truthy(text:find("p50 0.5 ms, p95 30.0 ms, p99 31.0 ms", 1, true), text)
  t.truthy(text:find("hybrid, 2 of 2048 entries", 1, true), text)
end)

t.test("accept details count UTF-16 code units and name the kind", function()
  local accepts = require("scopecache.accepts")
  t.eq(3, accepts.utf16_len("a😀"))
  t.eq({ kind = "word", acceptedLength = 5 }, accepts.details("word", "value", false))
  t.eq({ kind = "full", acceptedLength = 5 }, accepts.details("line", "value", true))
  t.eq({ kind = "full", acceptedLength = 2 }, accepts.details("all", "é!", true))
end)

t.test("word, line and full accepts are each reported with what is accepted so far", function()
  local lsp = require("scopecache.lsp")
  local reported = {}
  local report, client = lsp.report_accepted, lsp.client
  lsp.report_accepted = function(_, command, _, details)
    table.insert(reported, { command.arguments[1], details.kind, details.acceptedLength })
  end
  lsp.client = function()
    return {}
  end
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "    k" })
  local item = {
    insertText = 'key = f(":")\n    return key',
    range = { start = { line = 0, character = 4 }, ["end"] = { line = 0, character = 5 } },
    command = { command = "scopecache.accepted", arguments = { "s7", { source = "exact" } } },
  }
  ghost.show(buf, ghost.suggestion(buf, item, "utf-16", 0, 5), { hl_group = "Comment" })
  ghost.accept(buf, "word", {})
  ghost.accept(buf, "line", {})
  ghost.accept(buf, "all", {})
  lsp.report_accepted, lsp.client = report, client
  t.eq({ "    key = f(\":\")", "    return key" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  -- "k" was typed before the suggestion showed: lengths count from the item's start
  t.eq({ { "s7", "word", 3 }, { "s7", "line", 12 }, { "s7", "full", 27 } }, reported)
end)

t.test("the acceptance stats are shown per source with their rates", function()
  local lines = stats.acceptance_lines({
    acceptance = {
      shown = 10, accepted = 4, acceptedChars = 120, typedThrough = 2,
      retainedChars30s = 90, measuredChars30s = 100, retainedChars120s = 60, measuredChars120s = 100,
      byKind = { full = 2, word = 3, line = 1 },
      windowsSeconds = { 30, 120 },
      bySource = {
        exact = { shown = 4, accepted = 3, acceptedChars = 100, retainedChars30s = 90,
                  measuredChars30s = 100, retainedChars120s = 60, measuredChars120s = 100 },
        upstream = { shown = 6, accepted = 1, acceptedChars = 20, retainedChars30s = 0,
                     measuredChars30s = 0, retainedChars120s = 0, measuredChars120s = 0 },
      },
      mutedSources = { "upstream" },
    },
  })
  local text = table.concat(lines, "\n")
  t.truthy(text:find("accepted    4 of 10 shown (40%), 120 chars; full 2, word 3, line 1", 1, true), text)
  t.truthy(text:find("kept        90% after 30s, 60% after 120s", 1, true), text)
  t.truthy(text:find("typed       2 typed through by hand", 1, true), text)
  t.truthy(text:find("  exact       4 shown, 3 accepted (75%), 100 chars, kept 90% / 60%", 1, true), text)
  t.truthy(text:find("upstream    6 shown, 1 accepted (17%), 20 chars, kept - / - (muted)", 1, true), text)
  t.eq({}, stats.acceptance_lines({ served = {} }))
end)

t.test("stats before the first suggestion show a dash", function()
  t.truthy(stats.format({ served = {} })[2]:find("hit ratio   %- of 0 served"))
end)

t.test("bad plugin options are reported, defaults are valid", function()
  t.eq({}, config.check(config.merge({})))
  local problems = config.check(config.merge({ cmd = "scopecache serve", accept_key = 1 }))
  t.eq(2, #problems)
end)

t.test("an unknown option is reported at setup() with the nearest valid key", function()
  t.eq({ "unknown option acept_key (did you mean accept_key?)" }, config.unknown({ acept_key = "<C-y>" }))
  local far = config.unknown({ completely_else = 1 })[1]
  t.truthy(far:find("unknown option completely_else (valid: accept_key", 1, true), far)
  t.eq({}, config.unknown({ cmd = { "x" }, settings = {}, accept_key = false }))
  local notices = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notices, { msg, level })
  end
  local started = require("scopecache").setup({
    acept_key = "<C-y>",
    cmd = { "scopecache-unit-none", "serve" },
    filetypes = { "scopecache-none" },
  })
  vim.notify = notify
  t.eq(true, started, "setup() still starts")
  t.eq({ { "scopecache: unknown option acept_key (did you mean accept_key?)", vim.log.levels.WARN } }, notices)
end)

t.test("ghost text is drawn with ScopeCacheGhost, linked to Comment when it has a terminal colour", function()
  local hl = require("scopecache.highlight")
  vim.cmd("hi clear ScopeCacheGhost")
  vim.cmd("hi Comment ctermfg=8 guifg=#808080")
  hl.define()
  t.eq("Comment", vim.api.nvim_get_hl(0, { name = "ScopeCacheGhost" }).link)
  t.eq("ScopeCacheGhost", config.defaults.hl_group)
end)

t.test("ScopeCacheGhost gets a ctermfg when Comment has only a GUI colour, and follows :colorscheme", function()
  local hl = require("scopecache.highlight")
  hl.setup()
  vim.cmd("hi clear Comment")
  vim.cmd("hi Comment guifg=#123456")
  vim.api.nvim_exec_autocmds("ColorScheme", {})
  local group = vim.api.nvim_get_hl(0, { name = "ScopeCacheGhost" })
  t.eq(hl.CTERM_FALLBACK, group.ctermfg, vim.inspect(group))
  t.eq(tonumber("123456", 16), group.fg)
  t.eq(nil, group.link)
end)

t.test("a ScopeCacheGhost the user defined is kept", function()
  local hl = require("scopecache.highlight")
  vim.cmd("hi ScopeCacheGhost ctermfg=1 guifg=#ff0000")
  hl.define()
  vim.api.nvim_exec_autocmds("ColorScheme", {})
  local group = vim.api.nvim_get_hl(0, { name = "ScopeCacheGhost" })
  t.eq({ 1, tonumber("ff0000", 16) }, { group.ctermfg, group.fg })
end)

t.test("a server health answer with a failed completion is an error naming the fix", function()
  local reported = {}
  local original = vim.health
  vim.health = setmetatable({}, {
    __index = function(_, name)
      return function(msg, advice)
        table.insert(reported, { name, msg, advice })
      end
    end,
  })
  package.loaded["scopecache.health"] = nil
  local fresh = require("scopecache.health")
  fresh.report({
    settingsProblems = { "enpoint: unknown setting", "cache.policy: must be one of ..." },
    endpoint = "https://127.0.0.1:1/v1",
    provider = "openai",
    tls = { used = true, verify = true, caFile = vim.NIL, caFileStatus = "not set" },
    upstream = { status = "error", kind = "tls", message = "TLS failed", fix = "set transport.caFile" },
  })
  vim.health = original
  package.loaded["scopecache.health"] = nil
  local errors = vim.tbl_filter(function(r)
    return r[1] == "error"
  end, reported)
  t.eq(3, #errors, vim.inspect(reported))
  t.eq("setting enpoint: unknown setting", errors[1][2])
  t.eq("completion request failed (tls): TLS failed", errors[3][2])
  t.eq({ "set transport.caFile" }, errors[3][3])
end)

t.test("the accept key keeps its meaning when no suggestion is visible", function()
  vim.cmd("enew")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].expandtab = false
  require("scopecache.keys").attach_ghost(buf, config.merge({}))
  t.feed("ix", "nt")
  t.feed("<Tab>", "mt")
  t.feed("y<Esc>", "nt")
  t.eq({ "x\ty" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false))
end)

t.test("the accept key inserts the visible suggestion", function()
  vim.cmd("enew")
  local buf = vim.api.nvim_get_current_buf()
  local opts = config.merge({})
  require("scopecache.keys").attach_ghost(buf, opts)
  t.feed("ireturn ", "nt")
  t.wait_for("insert mode", function()
    return vim.api.nvim_get_mode().mode == "i"
  end)
  ghost.show(buf, ghost.suggestion(buf, { insertText = "a + b" }, "utf-16", 0, 7), opts)
  t.feed("<M-Right>", "mt")
  t.wait_for("word accepted", function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == "return a"
  end, 2000)
  t.eq(" + b", ghost.current(buf).text)
  t.feed("<Tab>", "mt")
  t.wait_for("rest accepted", function()
    return vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == "return a + b"
  end, 2000)
  t.eq(nil, ghost.current(buf))
  t.feed("<Esc>", "nt")
end)

local install = require("scopecache.install")

t.test("the default install source is this checkout with the extra grammars", function()
  local root = vim.fn.fnamemodify(root, ":h:h")
  t.eq(root, install.checkout())
  t.eq(root .. "[languages]", install.default_source())
  t.eq(root .. "[languages]", install.resolve_source(nil))
  t.eq(root .. "[languages]", install.resolve_source("  "))
end)

t.test("an install source that is a path is made absolute, extras kept; others pass unchanged", function()
  local cwd = vim.fn.getcwd()
  t.eq(cwd .. "/tests/harness.lua", install.resolve_source("tests/harness.lua"))
  t.eq(cwd .. "/tests[x,y]", install.resolve_source("tests/[x,y]"))
  t.eq("scopecache==0.1.0", install.resolve_source("scopecache==0.1.0"))
  t.eq("./no-such.whl", install.resolve_source("./no-such.whl"))
end)

t.test("Python 3.11 and newer are recent enough", function()
  t.truthy(install.recent_enough("3.11.0"))
  t.truthy(install.recent_enough("3.13.1"))
  t.truthy(install.recent_enough("4.0.0"))
  t.truthy(not install.recent_enough("3.10.14"))
  t.truthy(not install.recent_enough("2.7.18"))
  t.truthy(not install.recent_enough(nil))
end)

t.test("the server command: setup()'s cmd, else PATH, else the installed server, else none", function()
  local opts = config.merge({})
  t.eq({ "my-server", "serve" }, install.command(config.merge({ cmd = { "my-server", "serve" } }), true))
  local path = vim.env.PATH
  vim.env.PATH = ""
  t.eq(nil, install.command(opts, false)) -- nothing installed in this Neovim's data directory
  vim.env.PATH = path
  local bin = vim.fn.tempname()
  vim.fn.mkdir(bin, "p")
  vim.fn.writefile({ "#!/bin/sh" }, bin .. "/scopecache")
  vim.fn.setfperm(bin .. "/scopecache", "rwxr-xr-x")
  vim.env.PATH = bin .. ":" .. path
  t.eq({ "scopecache", "serve" }, install.command(opts, false))
  vim.env.PATH = path
end)

t.test("without a Python 3.11+ the install names what to install, and a build step raises it", function()
  local path = vim.env.PATH
  vim.env.PATH = vim.fn.tempname() -- no interpreter anywhere
  local messages = {}
  local co = coroutine.create(function()
    return install.build("scopecache")
  end)
  local ok, result
  repeat -- as lazy.nvim runs a build function: resumed until it ends, yields are progress
    ok, result = coroutine.resume(co)
    if coroutine.status(co) ~= "dead" then
      if result then
        table.insert(messages, result)
      end
      t.sleep(10)
    end
  until coroutine.status(co) == "dead"
  vim.env.PATH = path
  t.eq(false, ok, "the build step fails")
  t.truthy(tostring(result):find("no Python 3.11 or newer (none on PATH)", 1, true), tostring(result))
  t.truthy(tostring(result):find("sudo apt install python3.11", 1, true), tostring(result))
  t.eq({ "installing the server from scopecache" }, messages)
  t.eq(false, install.busy(), "nothing left running")
end)

t.test("setup() without cmd and with no server anywhere says once how to install one", function()
  local path = vim.env.PATH
  vim.env.PATH = ""
  local notices = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notices, { msg, level })
  end
  require("scopecache").setup({ filetypes = { "scopecache-none" } })
  require("scopecache").setup({ filetypes = { "scopecache-none" } })
  vim.notify = notify
  vim.env.PATH = path
  t.eq(1, #notices, vim.inspect(notices))
  t.truthy(notices[1][1]:find(":ScopeCacheInstall", 1, true), notices[1][1])
  t.eq(vim.log.levels.WARN, notices[1][2])
  t.eq(2, vim.fn.exists(":ScopeCacheInstall"), "setup() defines the commands")
end)

--- What scopecache.health reports for a verdict: a list of { kind, message, advice }.
local function health_report(verdict)
  local reported = {}
  local original = vim.health
  vim.health = setmetatable({}, {
    __index = function(_, name)
      return function(msg, advice)
        table.insert(reported, { name, msg, advice })
      end
    end,
  })
  package.loaded["scopecache.health"] = nil
  local ok_, err = pcall(require("scopecache.health").report, verdict)
  vim.health = original
  package.loaded["scopecache.health"] = nil
  assert(ok_, err)
  return reported
end

local FOUND_MESSAGE = "using llama.cpp at http://127.0.0.1:8012, found on 127.0.0.1; "
  .. "set endpoint (scopecache.endpoint in VS Code) to use another server"

t.test(":checkhealth names the completion server found on loopback", function()
  local reported = health_report({
    settingsProblems = {},
    endpoint = "http://127.0.0.1:8012",
    provider = "auto",
    discovery = { state = "found", url = "http://127.0.0.1:8012", kind = "llamacpp", message = FOUND_MESSAGE },
    tls = { used = false },
    upstream = { status = "ok", message = "the service answered a completion (5 characters)", latencyMs = 12 },
  })
  local found = vim.tbl_filter(function(r)
    return r[1] == "ok" and r[2] == "completion server " .. FOUND_MESSAGE
  end, reported)
  t.eq(1, #found, vim.inspect(reported))
end)

t.test(":checkhealth says no server was found, once, and names the endpoint setting", function()
  local message = "no completion server found on 127.0.0.1 (ports 8012, 8080, 11434, 1234, 8000): completions are off"
  local reported = health_report({
    settingsProblems = {},
    endpoint = vim.NIL,
    provider = "auto",
    discovery = { state = "none", url = vim.NIL, message = message },
    tls = { used = false },
    upstream = { status = "off", message = message, fix = "start a completion server" },
  })
  local warnings = vim.tbl_filter(function(r)
    return r[1] == "warn"
  end, reported)
  t.eq(1, #warnings, vim.inspect(reported))
  t.eq(message, warnings[1][2])
  t.truthy(table.concat(warnings[1][3], "\n"):find("settings = { endpoint = ", 1, true), vim.inspect(warnings))
end)

t.test(":checkhealth shows a model still loading as information, not as an error", function()
  local message = "llama.cpp at http://127.0.0.1:8012 is loading its model: completions start when it is ready"
  local reported = health_report({
    settingsProblems = {},
    endpoint = vim.NIL,
    discovery = { state = "loading", url = "http://127.0.0.1:8012", message = message },
    tls = { used = false },
    upstream = { status = "off", message = message },
  })
  local kinds = vim.tbl_map(function(r)
    return r[1]
  end, reported)
  t.eq({ "ok", "info" }, kinds, vim.inspect(reported))
  t.eq(message, reported[2][2])
end)

t.run()
