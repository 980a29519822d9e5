-- Headless Neovim with nothing configured but the ports: the real scopecache
-- server finds the real llama.cpp server (the real code model, as llama.cpp's
-- code-completion presets serve it) on a listed loopback port, ghost text
-- comes from it, and :checkhealth says which server it found. Started by
-- tests/e2e/test_neovim_discovery.py, which passes, in the environment:
--   SCOPECACHE_SERVER_CMD     JSON list: the server command
--   SCOPECACHE_PORTS          JSON list: discovery.ports (llama.cpp's port among them)
--   SCOPECACHE_LLAMA_URL      the llama.cpp server's URL, e.g. http://127.0.0.1:PORT
--   SCOPECACHE_WORKDIR        a scratch directory for the edited file
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
package.path = root .. "/tests/?.lua;" .. package.path
vim.cmd("runtime plugin/scopecache.lua")
vim.o.showmode = false
vim.o.swapfile = false

local t = require("harness")

vim.notify = function(msg)
  io.stderr:write("NOTIFY " .. tostring(msg) .. "\n")
end
local lsp = require("scopecache.lsp")
local ghost = require("scopecache.ghost")

local workdir = assert(os.getenv("SCOPECACHE_WORKDIR"), "SCOPECACHE_WORKDIR")
local llama_url = assert(os.getenv("SCOPECACHE_LLAMA_URL"), "SCOPECACHE_LLAMA_URL")
local started = require("scopecache").setup({
  cmd = vim.json.decode((assert(os.getenv("SCOPECACHE_SERVER_CMD"), "SCOPECACHE_SERVER_CMD"))),
  -- no endpoint: only the ports to look at
  settings = {
    discovery = { ports = vim.json.decode((assert(os.getenv("SCOPECACHE_PORTS"), "SCOPECACHE_PORTS"))) },
    cache = { l2 = "none" },
    speculative = { enabled = false },
  },
})
assert(started, "setup() failed")

local function stats_now()
  local result
  require("scopecache").stats(function(stats)
    result = stats
  end)
  return t.wait_for("scopecache/stats", function()
    return result
  end)
end

local buf

t.test("with no endpoint set the server finds llama.cpp on a listed port", function()
  vim.cmd("edit " .. vim.fn.fnameescape(workdir .. "/shapes.py"))
  buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "def area(radius):", "    " })
  vim.bo[buf].filetype = "python"
  t.wait_for("the server to attach", function()
    local client = lsp.client(buf)
    return client and client.initialized
  end, 30000)
  local endpoint = t.wait_for("the server to find llama.cpp", function()
    local stats = stats_now()
    return stats.endpoint and stats.endpoint.state == "found" and stats.endpoint
  end, 30000)
  t.eq(llama_url, endpoint.url)
  t.eq("discovered", endpoint.source)
end)

t.test("ghost text comes from the server it found", function()
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  t.feed("A", "nt")
  t.wait_for("insert mode", function()
    return vim.api.nvim_get_mode().mode == "i"
  end)
  t.feed("return ", "nt")
  local shown = t.wait_for("ghost text", function()
    local marks = vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
    return marks[1] and marks[1][4].virt_text and marks[1][4].virt_text[1][1]
  end, 90000)
  io.stderr:write("GHOST " .. shown .. "\n")
  local stats = stats_now()
  t.truthy(stats.upstreamRequests >= 1, vim.inspect(stats))
  t.feed("<Esc>", "nt")
end)

t.test(":checkhealth scopecache says which server it found", function()
  vim.cmd("checkhealth scopecache")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  t.truthy(text:find("completion server using llama.cpp at " .. llama_url, 1, true), text)
  t.truthy(text:find("found on 127.0.0.1", 1, true), text)
  t.truthy(text:find("completion request answered in", 1, true), text)
end)

t.run()
