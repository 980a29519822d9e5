-- Insert-mode keys for suggestions: accept (whole, word, line) and dismiss.
-- Each is an expr mapping that acts only while a suggestion is visible;
-- otherwise the key does what it did before (an earlier mapping, or itself).
local ghost = require("scopecache.ghost")

local M = {}

local function termcodes(keys)
  return vim.api.nvim_replace_termcodes(keys, true, false, true)
end

--- What the key did before we mapped it, as a function returning keys to feed.
function M.fallback(key, bufnr)
  local ok, map = pcall(vim.fn.maparg, key, "i", false, true)
  -- never fall back to our own buffer-local mapping
  if ok and type(map) == "table" and map.lhs and not (map.buffer == 1 and map.desc and map.desc:match("^scopecache")) then
    if map.callback then
      return function()
        local result = map.callback()
        if map.expr ~= 1 or type(result) ~= "string" then
          return ""
        end
        return map.replace_keycodes == 1 and termcodes(result) or result
      end
    end
    if map.rhs and map.expr ~= 1 then
      return function()
        return termcodes(map.rhs)
      end
    end
  end
  return function()
    return termcodes(key)
  end
end

--- The fallback of each key we mapped, per buffer: attaching again (after
--- :ScopeCacheRestart) must keep what the key did before our first mapping.
local fallbacks = {}

local function map(bufnr, key, desc, action)
  if not key then
    return
  end
  if not fallbacks[bufnr] then
    fallbacks[bufnr] = {}
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = bufnr,
      once = true,
      callback = function()
        fallbacks[bufnr] = nil
      end,
    })
  end
  local fallback = fallbacks[bufnr][key] or M.fallback(key, bufnr)
  fallbacks[bufnr][key] = fallback
  vim.keymap.set("i", key, function()
    if action() then
      return ""
    end
    return fallback()
  end, { buffer = bufnr, expr = true, replace_keycodes = false, silent = true, desc = desc })
end

--- Maps the keys for our own ghost text in one buffer.
function M.attach_ghost(bufnr, opts)
  -- Text cannot change inside an expr mapping (textlock): decide now, edit right after.
  local function later(kind)
    return function()
      if not ghost.current(bufnr) then
        return false
      end
      vim.schedule(function()
        ghost.accept(bufnr, kind, opts)
      end)
      return true
    end
  end
  map(bufnr, opts.accept_key, "scopecache: accept suggestion", later("all"))
  map(bufnr, opts.accept_word_key, "scopecache: accept next word", later("word"))
  map(bufnr, opts.accept_line_key, "scopecache: accept line", later("line"))
  map(bufnr, opts.dismiss_key, "scopecache: dismiss suggestion", function()
    if not ghost.current(bufnr) then
      return false
    end
    vim.schedule(function()
      ghost.clear(bufnr)
    end)
    return true
  end)
end

--- Maps the accept key for Neovim's built-in inline completion (0.12+).
function M.attach_builtin(bufnr, opts)
  map(bufnr, opts.accept_key, "scopecache: accept suggestion", function()
    return vim.lsp.inline_completion.get({ bufnr = bufnr }) and true or false
  end)
end

return M
