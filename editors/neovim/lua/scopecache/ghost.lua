-- Ghost text for Neovim versions without a built-in inline-completion UI:
-- asks textDocument/inlineCompletion as the user types in insert mode and
-- draws the first suggestion with extmarks in the "scopecache" namespace
-- (virtual text at the cursor, further lines as virtual lines).
local lsp = require("scopecache.lsp")
local accepts = require("scopecache.accepts")

local M = {}

M.ns = vim.api.nvim_create_namespace("scopecache")

local api = vim.api
local has_010 = vim.fn.has("nvim-0.10") == 1
local has_011 = vim.fn.has("nvim-0.11") == 1
local TRIGGER_AUTOMATIC = 2

---@class scopecache.Suggestion
---@field row integer 0-based row of the cursor when shown
---@field col integer byte column of the cursor when shown
---@field text string what is still to be inserted at the cursor
---@field replace_end integer|nil byte column the item's range ends at, on the cursor's row
---@field command table|nil the item's command (reported on accept)
---@field tick integer b:changedtick when shown
---@field typed string what of the item's text was already typed when it was shown
---@field accepted string|nil what of the rest was accepted so far (word / line accepts)

--- Per-buffer state: the visible suggestion, the pending request, the tick we caused.
local buffers = {}

local function state(bufnr)
  buffers[bufnr] = buffers[bufnr] or {}
  return buffers[bufnr]
end

local function cursor(bufnr)
  local win = vim.fn.bufwinid(bufnr)
  if win == -1 then
    return nil
  end
  local pos = api.nvim_win_get_cursor(win)
  return pos[1] - 1, pos[2]
end

local function in_insert_mode()
  return api.nvim_get_mode().mode:sub(1, 1) == "i"
end

--- Byte column of an LSP character offset in `line`.
local function byte_col(line, character, encoding)
  if encoding == "utf-8" then
    return math.min(character, #line)
  end
  local ok, col
  if has_011 then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == "utf-16")
  end
  return ok and col or #line
end

--- The text of an item, with snippet placeholders reduced to their defaults.
local function item_text(item)
  local text = item.insertText
  if type(text) == "table" then
    text = (text.value or ""):gsub("%${%d+:([^}]*)}", "%1"):gsub("%$%d+", "")
  end
  return text or ""
end

--- Turns an inline completion item into what to show at the cursor, or nil
--- when it does not fit the buffer as it is now.
---@return scopecache.Suggestion|nil
function M.suggestion(bufnr, item, encoding, row, col)
  local text = item_text(item)
  local replace_end
  local typed = ""
  if item.range then
    local start, finish = item.range.start, item.range["end"]
    if start.line ~= row or finish.line ~= row then
      return nil -- only ranges on the cursor's line are shown
    end
    local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
    local start_col = byte_col(line, start.character, encoding)
    local end_col = byte_col(line, finish.character, encoding)
    if start_col > col then
      return nil
    end
    typed = line:sub(start_col + 1, col)
    if text:sub(1, #typed) ~= typed then
      return nil -- the user typed something else than the suggestion starts with
    end
    text = text:sub(#typed + 1)
    replace_end = end_col > col and end_col or nil
  end
  if text == "" then
    return nil
  end
  return {
    row = row,
    col = col,
    text = text,
    replace_end = replace_end,
    command = item.command,
    tick = api.nvim_buf_get_changedtick(bufnr),
    typed = typed,
  }
end

--- Draws `s` as ghost text; returns the extmark id.
function M.render(bufnr, s, hl_group)
  api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local lines = vim.split(s.text, "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { lines[i], hl_group } })
  end
  local line = api.nvim_buf_get_lines(bufnr, s.row, s.row + 1, false)[1] or ""
  local pos = "inline"
  if not has_010 then
    -- before 0.10 there is no inline virtual text; overlay would hide the text after the cursor
    pos = s.col >= #line and "overlay" or "eol"
  end
  return api.nvim_buf_set_extmark(bufnr, M.ns, s.row, s.col, {
    virt_text = { { lines[1], hl_group } },
    virt_text_pos = pos,
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
  })
end

--- Cancels the buffer's request if the server has not answered it yet.
local function cancel_pending(st)
  local id, client = st.pending, st.client
  st.pending = nil
  if not id or not client then
    return
  end
  -- An answered request has left client.requests (its handler may still be
  -- queued): cancelling it would send a useless $/cancelRequest and make
  -- Neovim log "Cannot find request with id N" as an error.
  local request = client.requests and client.requests[id]
  if request and request.type == "pending" then
    pcall(lsp.cancel, client, id)
  end
end

--- Removes the ghost text of a buffer.
function M.clear(bufnr)
  local st = buffers[bufnr]
  if st then
    st.suggestion = nil
  end
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Removes the ghost text and pending requests of every buffer.
function M.clear_all()
  for bufnr, st in pairs(buffers) do
    cancel_pending(st)
    M.clear(bufnr)
  end
end

--- The visible suggestion of a buffer, if any.
---@return scopecache.Suggestion|nil
function M.current(bufnr)
  local st = buffers[bufnr]
  return st and st.suggestion or nil
end

function M.show(bufnr, s, opts)
  state(bufnr).suggestion = s
  M.render(bufnr, s, opts.hl_group)
end

--- Asks the server for a suggestion at the cursor.
function M.request(bufnr, opts)
  local st = state(bufnr)
  local client = lsp.client(bufnr)
  if not client or not in_insert_mode() or not require("scopecache.config").state.enabled then
    return
  end
  local row, col = cursor(bufnr)
  if not row then
    return
  end
  cancel_pending(st)
  local tick = api.nvim_buf_get_changedtick(bufnr)
  local encoding = client.offset_encoding or "utf-16"
  local params = vim.lsp.util.make_position_params(vim.fn.bufwinid(bufnr), encoding)
  params.context = { triggerKind = TRIGGER_AUTOMATIC }
  st.client = client
  -- Declared first: the handler must see this request's id, and a local
  -- exists only after the statement that declares it.
  local ok, id
  ok, id = lsp.request(client, "textDocument/inlineCompletion", params, function(err, result)
    if st.pending == id then
      st.pending = nil
    end
    if err or not result or not api.nvim_buf_is_valid(bufnr) or not in_insert_mode() then
      return
    end
    local now_row, now_col = cursor(bufnr)
    if api.nvim_buf_get_changedtick(bufnr) ~= tick or now_row ~= row or now_col ~= col then
      return -- stale: the user moved on
    end
    local items = result.items or result
    for _, item in ipairs(items) do
      local s = M.suggestion(bufnr, item, encoding, row, col)
      if s then
        M.show(bufnr, s, opts)
        return
      end
    end
    M.clear(bufnr)
  end, bufnr)
  if ok then
    st.pending = id
  end
end

--- Inserts `text` at the suggestion's cursor position (replacing up to
--- `replace_end` when given) and puts the cursor after it.
local function insert(bufnr, s, text, replace_end)
  local lines = vim.split(text, "\n", { plain = true })
  api.nvim_buf_set_text(bufnr, s.row, s.col, s.row, replace_end or s.col, lines)
  local last_row = s.row + #lines - 1
  local last_col = #lines == 1 and s.col + #lines[1] or #lines[#lines]
  api.nvim_win_set_cursor(vim.fn.bufwinid(bufnr), { last_row + 1, last_col })
  return last_row, last_col
end

--- The part of `text` a partial accept takes: the next word, or the rest of the line.
function M.portion(text, kind)
  if kind == "word" then
    return text:match("^[ \t]*[%w_]+")
      or text:match("^[ \t]*[^%w_%s]+")
      or text:match("^[ \t]*\n[ \t]*")
      or text
  elseif kind == "line" then
    local first = text:match("^\n?[^\n]*")
    return first ~= "" and first or text
  end
  return text
end

--- Accepts the visible suggestion (kind "all", "word" or "line"); false when none is visible.
function M.accept(bufnr, kind, opts)
  local s = M.current(bufnr)
  if not s then
    return false
  end
  local part = M.portion(s.text, kind or "all")
  local rest = s.text:sub(#part + 1)
  local st = state(bufnr)
  M.clear(bufnr)
  local row, col = insert(bufnr, s, part, rest == "" and s.replace_end or nil)
  local accepted = (s.accepted or "") .. part
  local details = accepts.details(kind or "all", (s.typed or "") .. accepted, rest == "")
  lsp.report_accepted(lsp.client(bufnr), s.command, bufnr, details)
  if rest == "" then
    return true
  end
  -- keep showing what is left; our own edit must not trigger a new request
  local left = vim.tbl_extend("force", s, {
    row = row,
    col = col,
    text = rest,
    accepted = accepted,
    tick = api.nvim_buf_get_changedtick(bufnr),
  })
  st.own_tick = left.tick
  M.show(bufnr, left, opts)
  return true
end

--- Starts drawing suggestions in a buffer.
function M.attach(bufnr, opts)
  local group = api.nvim_create_augroup("scopecache.ghost." .. bufnr, { clear = true })
  local timer
  local function on_change()
    local st = state(bufnr)
    if st.own_tick == api.nvim_buf_get_changedtick(bufnr) then
      return
    end
    M.clear(bufnr)
    if opts.debounce_ms > 0 then
      timer = timer or vim.loop.new_timer()
      timer:stop()
      timer:start(opts.debounce_ms, 0, vim.schedule_wrap(function()
        M.request(bufnr, opts)
      end))
    else
      M.request(bufnr, opts)
    end
  end
  api.nvim_create_autocmd("TextChangedI", { group = group, buffer = bufnr, callback = on_change })
  api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      local s = M.current(bufnr)
      if not s or s.tick ~= api.nvim_buf_get_changedtick(bufnr) then
        return -- typing: TextChangedI decides
      end
      local row, col = cursor(bufnr)
      if row ~= s.row or col ~= s.col then
        M.clear(bufnr)
      end
    end,
  })
  api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      cancel_pending(state(bufnr))
      M.clear(bufnr)
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = bufnr,
    callback = function()
      buffers[bufnr] = nil
      if timer then
        timer:close()
      end
    end,
  })
end

return M
