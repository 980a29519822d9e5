-- Editing helpers shared by the specs that drive the real server: open a file
-- with given lines, wait for the server, type in insert mode, read the ghost
-- text the plugin drew.
local t = require("harness")
local lsp = require("scopecache.lsp")
local ghost = require("scopecache.ghost")

local M = {}

--- Opens `path` with `lines` as its text and `filetype`, and waits until the server is attached.
function M.open(path, lines, filetype)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = filetype
  t.wait_for("the server to attach", function()
    local client = lsp.client(buf)
    return client and client.initialized
  end, 30000)
  return buf
end

--- The first line of the ghost text drawn in `buf`, or nil.
function M.ghost_text(buf)
  local marks = vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  local mark = marks[1]
  if not mark or not mark[4].virt_text then
    return nil
  end
  return mark[4].virt_text[1][1]
end

--- Waits until `buf` shows `expected` as ghost text; returns it.
function M.wait_for_ghost(buf, expected, timeout_ms)
  return t.wait_for("ghost text " .. vim.inspect(expected), function()
    return M.ghost_text(buf) == expected and expected
  end, timeout_ms or 20000)
end

--- Goes to the end of line `row` (1-based) in insert mode and types `text` there.
function M.type_at_end(row, text)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  t.feed("A", "nt")
  t.wait_for("insert mode", function()
    return vim.api.nvim_get_mode().mode == "i"
  end)
  t.feed(text, "nt")
end

--- The lines of Neovim's LSP log (lsp.log).
function M.lsp_log()
  local path = vim.lsp.get_log_path and vim.lsp.get_log_path() or require("vim.lsp.log").get_filename()
  if vim.fn.filereadable(path) == 0 then
    return {}
  end
  return vim.fn.readfile(path)
end

return M
