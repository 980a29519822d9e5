-- Options of require("scopecache").setup(opts): defaults, merging and checks.
-- The server settings (opts.settings) are checked by the server, which
-- reports them with window/showMessage and in :checkhealth scopecache.
local M = {}

M.defaults = {
  -- the language server command (stdio); when not given and not on PATH, the
  -- server :ScopeCacheInstall installed is started with these arguments
  cmd = { "scopecache", "serve" },
  -- the Python 3.11+ :ScopeCacheInstall makes the server's environment with
  -- (false: the first of python3, python, python3.14 ... python3.11 on PATH)
  python = false,
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

--- Run-time state: completions on or off (:ScopeCacheToggle), and setup() done.
M.state = { enabled = true, setup = false }

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
  if not (opts.python == false or (type(opts.python) == "string" and opts.python ~= "")) then
    table.insert(problems, "python must be the path or name of a Python 3.11+, or false")
  end
  if type(opts.debounce_ms) ~= "number" or opts.debounce_ms < 0 then
    table.insert(problems, "debounce_ms must be a number >= 0")
  end
  return problems
end

--- Edit distance between two strings (insertions, deletions, substitutions).
local function distance(a, b)
  local previous = {}
  for j = 0, #b do
    previous[j] = j
  end
  for i = 1, #a do
    local current = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      current[j] = math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
    end
    previous = current
  end
  return previous[#b]
end

--- The valid option closest to `name`, when it is close enough to be a typo.
---@param name string
---@return string|nil
function M.nearest(name)
  local best, best_distance
  for key in pairs(M.defaults) do
    local d = distance(name:lower(), key)
    if not best_distance or d < best_distance or (d == best_distance and key < best) then
      best, best_distance = key, d
    end
  end
  if best_distance and best_distance <= math.max(2, math.floor(#name / 3)) then
    return best
  end
  return nil
end

--- Options setup() does not know (typos), one readable line each, naming the nearest valid key.
---@param opts table|nil
---@return string[]
function M.unknown(opts)
  local lines = {}
  local names = {}
  for key in pairs(opts or {}) do
    if M.defaults[key] == nil then
      table.insert(names, tostring(key))
    end
  end
  table.sort(names)
  for _, name in ipairs(names) do
    local near = M.nearest(name)
    if near then
      table.insert(lines, ("unknown option %s (did you mean %s?)"):format(name, near))
    else
      local valid = vim.tbl_keys(M.defaults)
      table.sort(valid)
      table.insert(lines, ("unknown option %s (valid: %s)"):format(name, table.concat(valid, ", ")))
    end
  end
  return lines
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
