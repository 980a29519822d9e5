-- Starting the scopecache language server and talking to it, across
-- Neovim 0.8 - 0.12 (method-style client calls arrived in 0.11,
-- vim.lsp.config/enable in 0.11, vim.lsp.get_clients in 0.10).
local M = {}

M.name = "scopecache"

local has_011 = vim.fn.has("nvim-0.11") == 1

--- The running scopecache client (for a buffer, or any).
---@param bufnr integer|nil
function M.client(bufnr)
  local filter = { name = M.name, bufnr = bufnr }
  local clients = vim.lsp.get_clients and vim.lsp.get_clients(filter) or vim.lsp.get_active_clients(filter)
  return clients[1]
end

--- client:request on 0.11+, client.request before; returns ok, request_id.
function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.cancel(client, request_id)
  if has_011 then
    client:cancel_request(request_id)
  else
    client.cancel_request(request_id)
  end
end

--- Reports an accepted suggestion (the item's command) to the server.
---@param client table|nil
---@param command table|nil lsp.Command from the inline completion item
---@param details table|nil { kind, acceptedLength } of a word or line accept (scopecache.accepts)
function M.report_accepted(client, command, bufnr, details)
  if not client or not command or not command.command then
    return
  end
  local arguments = command.arguments
  if details then
    arguments = vim.list_extend(vim.deepcopy(type(arguments) == "table" and arguments or {}), { details })
  end
  M.request(client, "workspace/executeCommand", {
    command = command.command,
    arguments = arguments,
  }, function() end, bufnr)
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = { dynamicRegistration = false }
  return caps
end

local function root_dir(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local start = name ~= "" and vim.fs.dirname(name) or vim.loop.cwd()
  local found = vim.fs.find(markers, { upward = true, path = start })[1]
  return found and vim.fs.dirname(found) or start
end

--- The client configuration shared by both ways of starting.
local function client_config(opts, on_attach)
  return {
    name = M.name,
    cmd = opts.cmd,
    -- the server sends its log as window/logMessage at each record's level;
    -- Neovim would file anything on stderr as an error
    cmd_env = { SCOPECACHE_LOG_TO_CLIENT = "1" },
    filetypes = opts.filetypes,
    root_markers = opts.root_markers,
    init_options = opts.settings,
    -- answered to workspace/configuration and sent as didChangeConfiguration
    settings = { scopecache = opts.settings },
    capabilities = capabilities(),
    on_attach = on_attach,
    commands = {
      -- the built-in UI runs the item's command through client:exec_cmd; send it on
      ["scopecache.accepted"] = function(command, ctx)
        local client = vim.lsp.get_client_by_id(ctx.client_id)
        if client then
          M.report_accepted(client, command, ctx.bufnr)
        end
      end,
    },
  }
end

--- Every running scopecache client.
function M.clients()
  local filter = { name = M.name }
  return vim.lsp.get_clients and vim.lsp.get_clients(filter) or vim.lsp.get_active_clients(filter)
end

local function is_stopped(client)
  if has_011 then
    return client:is_stopped()
  end
  return client.is_stopped()
end

local function stop_client(client, force)
  if has_011 then
    client:stop(force)
  else
    client.stop(force)
  end
end

--- Stops every scopecache client; calls done() once their processes are gone
--- (after `timeout_ms`, default 5000, they are killed).
function M.stop(done, timeout_ms)
  local clients = M.clients()
  if has_011 then
    vim.lsp.enable(M.name, false) -- this stops them too
  else
    for _, client in ipairs(clients) do
      stop_client(client, false)
    end
  end
  local deadline = vim.loop.now() + (timeout_ms or 5000)
  local timer = vim.loop.new_timer()
  timer:start(0, 20, vim.schedule_wrap(function()
    local running = vim.tbl_filter(function(client)
      return not is_stopped(client)
    end, clients)
    if #running > 0 and vim.loop.now() < deadline then
      return
    end
    for _, client in ipairs(running) do
      stop_client(client, true)
    end
    if not timer:is_closing() then
      timer:close()
      if done then
        done()
      end
    end
  end))
end

--- Starts (or enables) the server for opts.filetypes; on_attach(client, bufnr) per buffer.
function M.start(opts, on_attach)
  local config = client_config(opts, on_attach)
  if has_011 then
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
    return
  end
  local group = vim.api.nvim_create_augroup("scopecache.start", { clear = true })
  local function attach(bufnr)
    local start_config = vim.deepcopy(config)
    start_config.root_dir = root_dir(bufnr, opts.root_markers)
    start_config.on_attach = on_attach
    start_config.commands = config.commands
    vim.lsp.start(start_config, { bufnr = bufnr })
  end
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = opts.filetypes,
    callback = function(args)
      attach(args.buf)
    end,
  })
  -- buffers that were already open when setup() ran
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) then
      attach(bufnr)
    end
  end
end

--- Sends new settings to the running server.
function M.update_settings(settings)
  local client = M.client()
  if not client then
    return
  end
  client.config.settings = { scopecache = settings }
  local params = { settings = { scopecache = settings } }
  if has_011 then
    client:notify("workspace/didChangeConfiguration", params)
  else
    client.notify("workspace/didChangeConfiguration", params)
  end
end

return M
