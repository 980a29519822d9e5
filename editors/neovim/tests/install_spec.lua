-- The plugin installs its own server: no scopecache on PATH, no cmd in
-- setup(), then :ScopeCacheInstall, and ghost text from the installed server.
-- Started by tests/e2e/test_neovim.py, which passes, in the environment:
--   SCOPECACHE_INSTALL_SOURCE  what to install (the project's wheel)
--   SCOPECACHE_PYTHON          the Python to install with, when the one on PATH would not do
--   SCOPECACHE_ENDPOINT        the reference service's /v1 URL
--   SCOPECACHE_CA_FILE         its CA certificate
--   SCOPECACHE_WORKDIR         a scratch directory for the edited files
-- and PIP_FIND_LINKS / PIP_NO_INDEX pointing pip at a local wheelhouse.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/tests/?.lua;" .. package.path
vim.cmd("runtime plugin/scopecache.lua")
vim.o.showmode = false
vim.o.swapfile = false

local t = require("harness")
local editing = require("editing")
local lsp = require("scopecache.lsp")
local install = require("scopecache.install")

local notices = {}
vim.notify = function(msg, level)
  table.insert(notices, { msg = msg, level = level })
  io.stderr:write("NOTIFY " .. tostring(msg) .. "\n")
end

local function noticed(text)
  for _, notice in ipairs(notices) do
    if notice.msg:find(text, 1, true) then
      return notice
    end
  end
  return nil
end

local workdir = assert(os.getenv("SCOPECACHE_WORKDIR"), "SCOPECACHE_WORKDIR")
local source = assert(os.getenv("SCOPECACHE_INSTALL_SOURCE"), "SCOPECACHE_INSTALL_SOURCE")
local python = os.getenv("SCOPECACHE_PYTHON")

--- The :checkhealth scopecache report as text.
local function checkhealth()
  vim.cmd("checkhealth scopecache")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  return text
end

-- The corpus the reference service indexed has this line in full:
--     key, _, value = line.partition(":")
local BEFORE = { "import json", "", "", "def parse_header(line):", "    key, _, value = " }

t.test("with no server anywhere, setup() says how to get one and :checkhealth names what is missing", function()
  t.eq(0, vim.fn.executable("scopecache"), "scopecache on PATH")
  t.truthy(require("scopecache").setup({
    python = python ~= "" and python or false,
    settings = {
      endpoint = assert(os.getenv("SCOPECACHE_ENDPOINT"), "SCOPECACHE_ENDPOINT"),
      transport = { caFile = os.getenv("SCOPECACHE_CA_FILE") },
      cache = { l2 = "none" },
      speculative = { enabled = false },
    },
  }))
  local notice = t.truthy(noticed("no server to start: run :ScopeCacheInstall"), vim.inspect(notices))
  t.eq(vim.log.levels.WARN, notice.level)
  local text = checkhealth()
  t.truthy(text:find("server not installed", 1, true), text)
  t.truthy(text:find(":ScopeCacheInstall installs it into " .. install.venv(), 1, true), text)
  t.truthy(text:match("Python 3%.%d+%.%d+ for :ScopeCacheInstall"), text)
end)

t.test(":ScopeCacheInstall installs the server, which starts and shows ghost text", function()
  vim.cmd("edit " .. vim.fn.fnameescape(workdir .. "/installed.py"))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE)
  vim.bo[buf].filetype = "python"
  t.eq(nil, lsp.client(buf), "a client before the install")
  vim.cmd("ScopeCacheInstall " .. vim.fn.fnameescape(source))
  t.truthy(install.busy(), "the install runs in the background")
  local done = t.wait_for("the install", function()
    return noticed("installed in " .. install.venv()) or noticed("install failed")
  end, 600000)
  t.truthy(done.msg:find("scopecache %d+%.%d+"), done.msg)
  t.truthy(noticed("installing the server from " .. source), vim.inspect(notices))
  t.truthy(noticed("pip install " .. source), vim.inspect(notices))
  local client = t.wait_for("the installed server to attach", function()
    local c = lsp.client(buf)
    return c and c.initialized and c
  end, 60000)
  t.eq(install.server_exe(), client.config.cmd[1], "the server command")
  editing.type_at_end(#BEFORE, "line.part")
  editing.wait_for_ghost(buf, 'ition(":")')
  t.feed("<Esc>", "nt")
end)

t.test(":checkhealth scopecache reports the installed server and its version", function()
  local text = checkhealth()
  t.truthy(text:match("server installed by :ScopeCacheInstall: scopecache %d+%.%d+[^\n]* in " .. vim.pesc(install.venv())), text)
  t.truthy(text:find("server running", 1, true), text)
  t.truthy(text:find("completion request answered in", 1, true), text)
  t.truthy(not text:find("ERROR", 1, true), text)
end)

t.test("installing again replaces the server and restarts it for the open buffer", function()
  local buf = vim.api.nvim_get_current_buf()
  local old = t.truthy(lsp.client(buf), "the installed server")
  local old_id = old.id
  notices = {}
  vim.cmd("ScopeCacheInstall " .. vim.fn.fnameescape(source))
  t.wait_for("the second install", function()
    return noticed("installed in " .. install.venv()) or noticed("install failed")
  end, 600000)
  -- the same version as installed: pip is asked to install the wheel again
  t.truthy(noticed("pip install --force-reinstall " .. source), vim.inspect(notices))
  t.wait_for("the restart", function()
    return noticed("server restarted")
  end, 30000)
  local new = t.wait_for("a new client attached to the buffer", function()
    local client = lsp.client(buf)
    return client and client.id ~= old_id and client.initialized and client
  end, 30000)
  t.eq(install.server_exe(), new.config.cmd[1], "the server command")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, BEFORE)
  editing.type_at_end(#BEFORE, "line.part")
  editing.wait_for_ghost(buf, 'ition(":")')
  t.feed("<Esc>", "nt")
end)

t.test("a source pip cannot install is an error naming it, and the installed server stays", function()
  notices = {}
  local missing = workdir .. "/no-such-scopecache.whl"
  vim.cmd("ScopeCacheInstall " .. vim.fn.fnameescape(missing))
  local failed = t.wait_for("the failed install", function()
    return noticed("install failed")
  end, 120000)
  t.eq(vim.log.levels.ERROR, failed.level)
  t.truthy(failed.msg:find("pip install " .. missing .. " failed", 1, true), failed.msg)
  t.truthy(install.installed(), "the server is still installed")
  t.truthy(lsp.client(vim.api.nvim_get_current_buf()), "and running")
end)

t.after = function()
  vim.lsp.stop_client(vim.lsp.get_clients({ name = lsp.name }), true)
end

t.run()
