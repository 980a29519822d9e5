-- A tiny asynchronous test runner for headless Neovim.
--
-- Each test runs in a coroutine so that it can hand control back to the main
-- loop: typed keys (feedkeys) and LSP messages are only processed there, not
-- inside vim.wait. The process exits 0 when every test passed, 1 otherwise.
local M = { tests = {}, failures = 0 }

local function log(text)
  io.stderr:write(text .. "\n")
end

--- Registers a test.
function M.test(name, fn)
  table.insert(M.tests, { name = name, fn = fn })
end

local current

--- Suspends the test for `ms` milliseconds of main-loop time.
function M.sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    coroutine.resume(co)
  end, ms)
  coroutine.yield()
end

--- Waits until predicate() is truthy (checked every 20 ms); fails after timeout_ms.
function M.wait_for(what, predicate, timeout_ms)
  local deadline = vim.loop.now() + (timeout_ms or 10000)
  while true do
    local value = predicate()
    if value then
      return value
    end
    if vim.loop.now() > deadline then
      error("timed out waiting for " .. what, 2)
    end
    M.sleep(20)
  end
end

--- Feeds keys as if typed (mode "t": typed, "m": remappable, "n": not remapped).
function M.feed(keys, mode)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), mode or "nt", false)
  M.sleep(10)
end

function M.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(("%s: expected %s, got %s"):format(what or "value", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function M.truthy(value, what)
  if not value then
    error((what or "value") .. " is not true", 2)
  end
  return value
end

--- Runs every test in order, then quits with the result as exit code.
function M.run()
  local co = coroutine.create(function()
    for _, t in ipairs(M.tests) do
      current = t.name
      local ok, err = xpcall(t.fn, debug.traceback)
      if ok then
        log("ok   " .. t.name)
      else
        M.failures = M.failures + 1
        log("FAIL " .. t.name .. "\n" .. tostring(err))
      end
    end
    log(("%d tests, %d failed"):format(#M.tests, M.failures))
    if M.after then
      pcall(M.after)
    end
    vim.cmd(M.failures == 0 and "qall!" or "cquit! 1")
  end)
  vim.schedule(function()
    local ok, err = coroutine.resume(co)
    if not ok then
      log("runner crashed in " .. tostring(current) .. ": " .. tostring(err))
      vim.cmd("cquit! 2")
    end
  end)
end

return M
