"""A real VS Code for tests: code-server on 127.0.0.1 with the extension's ``.vsix``.

code-server and the Node 24 it needs are installed outside the clone by
``editors/vscode/scripts/install-code-server.sh`` (``make code-server``);
``code_server_binary()`` finds them. ``CodeServer`` runs one instance with
everything it writes under one temporary directory: user data, extensions,
the XDG directories (so nothing lands in the home directory, and the L2
cache is fresh), the workspace. User settings are written before it starts:
code-server ignores a ``settings.json`` edited on disk while a window is
connected. It also keeps a closed window's extension host alive, so a test
that needs a fresh extension starts a fresh ``CodeServer``.

    with CodeServer(binary, tmp_path, settings={"scopecache.endpoint": url}) as vscode:
        vscode.install_extension(vsix)   # before start()
        driver.get(vscode.url)
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / "editors" / "vscode" / "scripts" / "install-code-server.sh"
STARTUP_TIMEOUT = 60.0
FLAGS = (
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
)
#: editor settings that keep the workbench quiet and the typed text exact
QUIET_SETTINGS: Mapping[str, Any] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
    "files.autoSave": "off",
    "editor.minimap.enabled": False,
    # the test types code character by character: no pairs inserted for it
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    "window.restoreWindows": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    # VS Code's own AI features would compete for the ghost text
    "chat.disableAIFeatures": True,
    # code-server notices the ports opened on this machine (the reference
    # service, another test's servers) and pops "Open in Browser" toasts that
    # take the focus, and with it the ghost text, from the editor
    "remote.autoForwardPorts": False,
    "remote.restoreForwardedPorts": False,
}


class CodeServerError(RuntimeError):
    """code-server did not install, start or answer."""


def code_server_binary() -> Path | None:
    """The installed code-server launcher, or None when it is not installed."""
    try:
        out = subprocess.run(
            ["bash", str(INSTALL_SCRIPT), "--print-bin"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    binary = Path(out)
    return binary if binary.is_file() and (binary.parent.parent / ".installed").exists() else None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class CodeServer:
    """One code-server process with its own user data, extensions and XDG dirs."""

    def __init__(
        self,
        binary: Path,
        root: Path,
        *,
        settings: Mapping[str, Any] | None = None,
        path: Sequence[str | os.PathLike[str]] | None = None,
    ) -> None:
        self.binary = binary
        self.root = root
        self.user_data = root / "user-data"
        self.extensions = root / "extensions"
        self.workspace = root / "workspace"
        self.settings = {**QUIET_SETTINGS, **(settings or {})}
        #: the whole PATH code-server and its extension host see (None: this process's)
        self.path = None if path is None else os.pathsep.join(str(p) for p in path)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        for d in (self.user_data / "User", self.extensions, self.workspace, self.home):
            d.mkdir(parents=True, exist_ok=True)
        if self.path is not None:
            # the extension host takes PATH from a login shell, which reads these
            profile = f"PATH={shlex.quote(self.path)}\nexport PATH\n"
            for name in (".profile", ".bash_profile"):
                (self.home / name).write_text(profile)

    @property
    def env(self) -> dict[str, str]:
        """The environment code-server and its extension host run in."""
        env = dict(os.environ)
        for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env[name] = str(self.root / "xdg" / name.split("_")[1].lower())
        if self.path is not None:
            env["PATH"] = self.path
        # The extension host takes PATH from a login shell, not from this
        # environment: a home of its own whose profile sets the same PATH.
        env["HOME"] = str(self.home)
        return env

    @property
    def home(self) -> Path:
        """The home directory code-server and its login shell see."""
        return self.root / "home"

    @property
    def url(self) -> str:
        """The workbench with the workspace folder open."""
        return f"http://127.0.0.1:{self.port}/?folder={self.workspace}"

    @property
    def log_file(self) -> Path:
        """code-server's own stdout and stderr."""
        return self.root / "code-server.log"

    def _command(self) -> list[str]:
        return [
            str(self.binary),
            "--user-data-dir",
            str(self.user_data),
            "--extensions-dir",
            str(self.extensions),
        ]

    def _run(self, *args: str, timeout: float = 120.0) -> str:
        result = subprocess.run(
            [*self._command(), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise CodeServerError(f"code-server {' '.join(args)}:\n{result.stdout}{result.stderr}")
        return result.stdout

    def install_extension(self, vsix: Path) -> str:
        """``code-server --install-extension``; returns what it printed."""
        return self._run("--install-extension", str(vsix))

    def start(self) -> CodeServer:
        """Write the settings and config, start code-server, wait until it answers."""
        (self.user_data / "User" / "settings.json").write_text(json.dumps(self.settings, indent=2))
        self.port = free_port()
        config = self.root / "config.yaml"
        config.write_text(f"bind-addr: 127.0.0.1:{self.port}\nauth: none\ncert: false\n")
        args = [*self._command(), "--config", str(config), *FLAGS, str(self.workspace)]
        with open(self.log_file, "ab") as log:
            # its own session: stop() ends code-server and everything it started
            self.process = subprocess.Popen(
                args, stdout=log, stderr=log, env=self.env, cwd=self.root, start_new_session=True
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise CodeServerError(f"code-server exited:\n{self.log()}")
                try:
                    if client.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
        self.stop()
        raise CodeServerError(f"code-server did not answer in {STARTUP_TIMEOUT} s:\n{self.log()}")

    def log(self) -> str:
        """code-server's output so far."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """End code-server's whole process group: SIGTERM, then SIGKILL."""
        proc, self.process = self.process, None
        if proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=5)
                if not self.group_alive(proc.pid):
                    break
            except subprocess.TimeoutExpired:
                continue

    @staticmethod
    def group_alive(pgid: int) -> bool:
        """True while any process of the group is left."""
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True

    def __enter__(self) -> CodeServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what the extension started ------------------------------------------

    def processes(self) -> list[tuple[int, list[str]]]:
        """(pid, argv) of every live process code-server started (its session)."""
        if self.process is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            state, session = fields[0], int(fields[3])
            if session == self.process.pid and state != "Z":
                found.append((int(entry.name), [a.decode(errors="replace") for a in argv if a]))
        return found

    def extension_host_path(self) -> str | None:
        """PATH in the environment of the extension host (None: it is not running)."""
        for pid, argv in self.processes():
            if any("extensionHost" in a for a in argv):
                try:
                    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                except OSError:
                    continue
                for entry in environ:
                    if entry.startswith(b"PATH="):
                        return entry[5:].decode(errors="replace")
        return None

    def language_servers(self) -> list[int]:
        """Pids of the running ``scopecache serve`` processes."""
        return sorted(
            pid
            for pid, argv in self.processes()
            if "serve" in argv and any(Path(a).name == "scopecache" for a in argv[:2])
        )

    def output_channel_log(self) -> str:
        """The extension's "scopecache" output channel, as VS Code wrote it to disk."""
        logs = sorted((self.user_data / "logs").glob("**/scopecache*.log"))
        return "".join(p.read_text(errors="replace") for p in logs)
