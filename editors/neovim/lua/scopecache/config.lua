-- Options of require("scopecache").setup(opts): defaults, merging and checks.
-- The server's own settings (opts.settings) are checked only lightly here;
-- the server validates them and reports problems with window/showMessage.
local M = {}

M.defaults = {
  -- the language server command (stdio)
  cmd = { "scopecache", "serve" },
  -- server settings, camelCase, sent as init_options and workspace settings
  settings = {},
  -- every filetype the server has a grammar for (generated from the server's registry)
  filetypes = require("scopecache.filetypes"),
  root_markers = { "pyproject.toml", "setup.py", ".git" },
  -- accept the whole suggestion; only mapped while a suggestion is visible
  accept_key = "<Tab>",
  -- accept the next word / the rest of the line of the suggestion
  accept_word_key = "<M-Right>",
  accept_line_key = "<M-l>",
  -- hide the current suggestion
  dismiss_key = "<C-]>",
  -- wait this long after the last keystroke before asking (the server answers hits
  -- in about a millisecond and throttles misses itself, so 0 is fine)
  debounce_ms = 0,
  -- on Neovim 0.12+ use the built-in vim.lsp.inline_completion UI
  builtin = true,
  -- highlight group of the ghost text
  hl_group = "ScopeCacheGhost",
}

M.options = vim.deepcopy(M.defaults)

local function is_string_list(value)
  if type(value) ~= "table" or #value == 0 then
    return false
  end
  for _, item in ipairs(value) do
    if type(item) ~= "string" then
      return false
    end
  end
  return true
end

local function optional_key(value)
  return value == false or value == nil or type(value) == "string"
end

--- Problems with plugin options, one readable line each.
---@param opts table
---@return string[]
function M.check(opts)
  local problems = {}
  if not is_string_list(opts.cmd) then
    table.insert(problems, "cmd must be a non-empty list of strings")
  end
  if type(opts.settings) ~= "table" then
    table.insert(problems, "settings must be a table")
  end
  if not is_string_list(opts.filetypes) then
    table.insert(problems, "filetypes must be a non-empty list of strings")
  end
  for _, name in ipairs({ "accept_key", "accept_word_key", "accept_line_key", "dismiss_key" }) do
    if not optional_key(opts[name]) then
      table.insert(problems, name .. " must be a key string or false")
    end
  end
  if type(opts.debounce_ms) ~= "number" or opts.debounce_ms < 0 then
    table.insert(problems, "debounce_ms must be a number >= 0")
  end
  return problems
end

local ENUMS = {
  provider = { "openai", "llamacpp", "ollama" },
  ["cache.policy"] = { "none", "lru", "lfu", "arc", "lruk", "hybrid" },
  ["cache.l2"] = { "none", "sqlite", "redis" },
  ["auth.kind"] = { "static", "oauth2-client-credentials", "command" },
}

local GROUPS = { cache = true, transport = true, completion = true, throttle = true, speculative = true, auth = true }

--- Problems with the server settings that can be seen without the server.
---@param settings table
---@return string[]
function M.check_settings(settings)
  local problems = {}
  if type(settings) ~= "table" then
    return { "settings must be a table" }
  end
  local endpoint = settings.endpoint
  if endpoint ~= nil and (type(endpoint) ~= "string" or not endpoint:match("^https?://[^/%s]+")) then
    table.insert(problems, "endpoint must be an http:// or https:// URL")
  end
  for path, allowed in pairs(ENUMS) do
    local group, key = path:match("^(%w+)%.(%w+)$")
    local value
    if group then
      value = type(settings[group]) == "table" and settings[group][key] or nil
    else
      value = settings[path]
    end
    if value ~= nil and not vim.tbl_contains(allowed, value) then
      table.insert(problems, ("%s must be one of %s"):format(path, table.concat(allowed, ", ")))
    end
  end
  for group in pairs(GROUPS) do
    if settings[group] ~= nil and type(settings[group]) ~= "table" then
      table.insert(problems, group .. " must be a table")
    end
  end
  return problems
end

--- Merge user options over the defaults (lists are replaced, not merged).
---@param opts table|nil
---@return table
function M.merge(opts)
  local merged = vim.deepcopy(M.defaults)
  for key, value in pairs(opts or {}) do
    merged[key] = vim.deepcopy(value)
  end
  return merged
end

return M
