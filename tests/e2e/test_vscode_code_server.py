"""The extension in a real VS Code: code-server driven by headless Chromium.

The linux-x64 platform ``.vsix``, packaged from this checkout with the
server's wheels inside, is the only thing installed into a code-server with
its own user data, extensions, XDG and home directories. Its PATH (and the
extension host's) holds a Python 3.11+ and the system directories, and no
``scopecache``; no server command is set. So the language server is the one
the extension installs from its bundle into its global storage on first
start, as on a user's machine. The completion service is the reference
service over TLS. The user settings are the defaults plus
``scopecache.endpoint`` and ``scopecache.transport.caFile`` (and a few
editor settings that keep the workbench quiet). Each test gets a fresh
code-server: it keeps a closed window's extension host alive, and ignores
settings edited on disk while a window is connected. The first-start test
gets a fresh global storage too; the others share one, so the bundle is
installed once for them.

Needs code-server (``make code-server``), the Debian packages ``chromium`` and
``chromium-driver``, ``selenium`` and the extension's Node packages. Outside
CI a missing piece skips with the reason; with ``CI`` set it fails.
Screenshots of the key moments go to ``test-artifacts/vscode-*.png``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
import pytest

from lsp_server.server.language_server import __version__
from tests.support.code_server import CodeServer, code_server_binary, free_port
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
CHROMEDRIVER = Path(shutil.which("chromedriver") or "/usr/bin/chromedriver")
SCOPECACHE_BIN = Path(sys.executable).parent
VSIX_TARGET = "linux-x64"
#: the global storage folder code-server gives the extension
STORAGE_NAME = "scopecache.scopecache"
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,800",
)
STATUS_ID = "scopecache.scopecache.scopecache.status"
#: how long a condition may take to hold: generous, because a loaded machine
#: runs Chromium, code-server, the extension host and the server at once
WAIT = 90.0

CORPUS = """\
import json


def parse_header(line):
    key, _, value = line.partition(":")
    return key.strip().lower(), value.strip()


def load(path):
    with open(path) as f:
        return json.load(f)
"""
#: what the file holds when the editor opens it
START = "import json\n\n\n"
TYPED = "def parse_hea"

#: a second language: Go, parsed by its own grammar (languageId ``go``)
GO_CORPUS = """\
package headers

import "strings"

func parseHeader(line string) (string, string) {
\tkey, value, _ := strings.Cut(line, ":")
\treturn strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
}
"""
GO_START = 'package headers\n\nimport "strings"\n\n'
GO_TYPED = "func parseHea"

#: a third: TypeScript (languageId ``typescript``)
TS_CORPUS = """\
export function parseHeader(line: string): [string, string] {
  const [key, ...rest] = line.split(":");
  return [key.trim().toLowerCase(), rest.join(":").trim()];
}
"""
TS_START = "// HTTP headers\n\n"
TS_TYPED = "export function parseHea"

T = TypeVar("T")


def _missing() -> list[str]:
    missing = []
    if code_server_binary() is None:
        missing.append("code-server (make code-server)")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        missing.append("Chromium (apt-get install chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    if shutil.which("npm") is None or not (EXTENSION / "node_modules").is_dir():
        missing.append("the extension's Node packages (npm ci in editors/vscode)")
    if not (SCOPECACHE_BIN / "scopecache").exists():
        missing.append("the scopecache console script beside this Python")
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        missing.append(f"a {VSIX_TARGET} machine (the package under test)")
    return missing


MISSING = _missing()
if MISSING and not os.environ.get("CI"):
    pytest.skip("needs " + ", ".join(MISSING), allow_module_level=True)


def wait_until(condition: Callable[[], T | None], what: str, timeout: float = WAIT) -> T:
    """Poll ``condition`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def vsix() -> Path:
    """The linux-x64 package of this checkout: the extension and the server's wheels."""
    assert not MISSING, "CI needs " + ", ".join(MISSING)
    result = subprocess.run(
        [sys.executable, "scripts/package_vsix.py", "--target", VSIX_TARGET],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return EXTENSION / f"scopecache-{VSIX_TARGET}.vsix"


@pytest.fixture(scope="module")
def user_path(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A PATH with a Python 3.11+ (as ``python3``) and the system folders, but no scopecache."""
    python_dir = tmp_path_factory.mktemp("python-bin")
    # the interpreter this virtualenv was made from, not the virtualenv's own
    base = getattr(sys, "_base_executable", sys.executable)
    (python_dir / "python3").symlink_to(Path(base).resolve())
    path = [python_dir, Path("/usr/bin"), Path("/bin")]
    joined = os.pathsep.join(map(str, path))
    assert shutil.which("scopecache", path=joined) is None, f"scopecache is on {joined}"
    return path


@pytest.fixture(scope="module")
def shared_storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One global storage for the extension across tests: its environment is made once."""
    return tmp_path_factory.mktemp("global-storage")


class StartCodeServer(Protocol):
    def __call__(
        self,
        settings: dict[str, Any],
        *,
        fresh_storage: bool = False,
        path: list[Path] | None = None,
    ) -> Workbench: ...


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceService]:
    corpus = tmp_path_factory.mktemp("corpus")
    (corpus / "headers.py").write_text(CORPUS)
    (corpus / "headers.go").write_text(GO_CORPUS)
    (corpus / "headers.ts").write_text(TS_CORPUS)
    with ReferenceService(corpus=[corpus]) as svc:
        yield svc


def service_answer(service: ReferenceService, prefix: str) -> str:
    """What the completion service continues ``prefix`` with (its first line)."""
    with service.client() as client:
        response = client.post(
            service.url + "/completions",
            json={"model": "m", "prompt": prefix, "max_tokens": 64, "temperature": 0},
        )
    response.raise_for_status()
    text: str = response.json()["choices"][0]["text"]
    return text.split("\n", 1)[0]


class Workbench:
    """The VS Code window in headless Chromium, as a user would drive it."""

    def __init__(self, vscode: CodeServer, name: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.vscode = vscode
        self.name = name
        opts = webdriver.ChromeOptions()
        opts.binary_location = str(CHROMIUM)
        for flag in (*CHROME_FLAGS, f"--user-data-dir={vscode.root / 'chromium'}"):
            opts.add_argument(flag)
        self.driver = webdriver.Chrome(options=opts, service=Service(str(CHROMEDRIVER)))
        self.driver.set_page_load_timeout(60)
        self.driver.get(vscode.url)
        wait_until(lambda: self.css(".monaco-workbench .statusbar"), "the workbench")

    def quit(self) -> None:
        self.driver.quit()

    # -- keys ----------------------------------------------------------------

    def keys(self, *keys: str) -> None:
        """Type into whatever has the focus (one key or text at a time)."""
        from selenium.webdriver.common.action_chains import ActionChains

        chain = ActionChains(self.driver)
        for key in keys:
            chain.send_keys(key)
        chain.perform()

    def chord(self, modifier: str, key: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).key_down(modifier).send_keys(key).key_up(modifier).perform()

    def type(self, text: str) -> None:
        """Type ``text`` key by key, as a user does."""
        for ch in text:
            self.keys(ch)

    # -- what is on screen ------------------------------------------------------

    def css(self, selector: str) -> list[Any]:
        return list(self.driver.find_elements("css selector", selector))

    def texts(self, selector: str, prop: str = "innerText") -> list[str]:
        """``prop`` of every element matching ``selector``, read in one step.

        The workbench re-renders all the time: elements found in one call may
        be gone by the next, so nothing is read element by element.
        """
        script = "return Array.from(document.querySelectorAll(arguments[0]), e => e[arguments[1]]);"
        found = self.driver.execute_script(script, selector, prop)
        # the editor draws spaces as no-break spaces
        return [(t or "").replace("\xa0", " ") for t in found]

    def quick_input_choice(self) -> str:
        """The row Enter would pick in Quick Open or the command palette ("" if none)."""
        return "\n".join(self.texts(".quick-input-list .monaco-list-row.focused"))

    def pick(self, name: str, what: str) -> None:
        """Type ``name`` into the focused quick input and pick its row.

        Enter picks the focused row, and the list filters a moment after
        the keys arrive: a row lower down may name ``name`` while the top
        one still matches what was typed so far. Enter only once ``name``
        is the row it would pick.
        """
        from selenium.webdriver.common.keys import Keys

        self.type(name)
        wait_until(lambda: name in self.quick_input_choice(), f"{name} picked in {what}")
        self.keys(Keys.ENTER)

    def ghost_text(self) -> str:
        """The inline suggestion shown in the editor (its first line)."""
        parts = self.texts(".monaco-editor .view-lines .ghost-text-decoration", "textContent")
        return "".join(parts)

    def ghost_dom(self) -> list[str]:
        """Every ghost-text element's class and text (for failure messages)."""
        selector = '.monaco-editor [class*="ghost"]'
        return [
            f"{cls}: {text!r}"
            for cls, text in zip(
                self.texts(selector, "className"), self.texts(selector, "textContent"), strict=False
            )
        ]

    def status(self) -> str:
        """The scopecache status item's label (codicons spelled as their names)."""
        script = "const e = document.getElementById(arguments[0]); return e ? e.ariaLabel : '';"
        return str(self.driver.execute_script(script, STATUS_ID) or "")

    def suggest_widget_visible(self) -> bool:
        return bool(self.css(".editor-widget.suggest-widget.visible"))

    def notifications(self) -> list[str]:
        """The texts of the notification toasts on screen."""
        return self.texts(".notification-toast-container .notification-toast")

    def notification_center(self) -> list[str]:
        """The texts of every notification of the session, toasts that hid themselves too."""
        self.run_command("Notifications: Show Notifications")
        wait_until(lambda: self.css(".notifications-center.visible"), "the notification center")
        return self.texts(".notifications-center .notification-list-item")

    def screenshot(self, moment: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"vscode-{self.name}-{moment}.png"
        self.driver.save_screenshot(str(path))
        return path

    # -- actions ---------------------------------------------------------------

    def open_file(self, name: str) -> None:
        """Quick Open (Ctrl+P) the file, then wait for its editor to have the focus."""
        from selenium.webdriver.common.keys import Keys

        self.chord(Keys.CONTROL, "p")
        wait_until(lambda: self.css(".quick-input-widget input:focus"), "Quick Open")
        self.pick(name, "Quick Open")
        tab = f'.tab.active[aria-label^="{name}"]'
        wait_until(
            lambda: self.css(tab) and self.css(".monaco-editor.focused"), f"the editor of {name}"
        )

    def go_to_end(self) -> None:
        from selenium.webdriver.common.keys import Keys

        self.chord(Keys.CONTROL, Keys.END)

    def save(self) -> None:
        from selenium.webdriver.common.keys import Keys

        self.chord(Keys.CONTROL, "s")
        wait_until(lambda: not self.css(".tab.active.dirty"), "the file to be saved")

    def run_command(self, title: str) -> None:
        """Run a command from the command palette (F1) by its title."""
        from selenium.webdriver.common.keys import Keys

        self.keys(Keys.F1)
        wait_until(lambda: self.css(".quick-input-widget input:focus"), "the command palette")
        self.pick(title, "the command palette")
        wait_until(lambda: not self.css(".quick-input-widget input:focus"), "the palette to close")


@pytest.fixture
def code_server_for(
    tmp_path: Path,
    vsix: Path,
    user_path: list[Path],
    shared_storage: Path,
    request: pytest.FixtureRequest,
) -> Iterator[StartCodeServer]:
    """Starts a fresh code-server with the given user settings and opens it.

    The workspace holds ``headers.py`` (``START``), ``headers.go``
    (``GO_START``) and ``headers.ts`` (``TS_START``). Without
    ``fresh_storage`` the extension's global storage is the module's shared
    one; ``path`` replaces the module's PATH.
    """
    started: list[tuple[CodeServer, Workbench]] = []

    def start(
        settings: dict[str, Any], *, fresh_storage: bool = False, path: list[Path] | None = None
    ) -> Workbench:
        binary = code_server_binary()
        assert binary is not None
        vscode = CodeServer(
            binary, tmp_path / "vscode", settings=settings, path=path or user_path
        )
        (vscode.workspace / "headers.py").write_text(START)
        (vscode.workspace / "headers.go").write_text(GO_START)
        (vscode.workspace / "headers.ts").write_text(TS_START)
        if not fresh_storage:
            storage = vscode.user_data / "User" / "globalStorage"
            storage.mkdir(parents=True, exist_ok=True)
            (storage / STORAGE_NAME).symlink_to(shared_storage, target_is_directory=True)
        vscode.install_extension(vsix)
        vscode.start()
        try:
            bench = Workbench(vscode, request.node.name.removeprefix("test_"))
        except BaseException:
            vscode.stop()
            raise
        started.append((vscode, bench))
        return bench

    yield start
    for vscode, bench in started:
        try:
            bench.screenshot("end")
            log = vscode.output_channel_log()
            (ARTIFACTS / f"vscode-{bench.name}-output.log").write_text(log)
            bench.quit()
        finally:
            vscode.stop()


def user_settings(service: ReferenceService, **extra: Any) -> dict[str, Any]:
    return {
        "scopecache.endpoint": service.url,
        "scopecache.transport.caFile": str(service.ca_file),
        **extra,
    }


def server_stats(metrics_port: int) -> dict[str, Any] | None:
    """``scopecache/stats`` as the server's metrics endpoint serves it (None: not up)."""
    try:
        with httpx.Client(timeout=5.0) as client:
            answer: dict[str, Any] = client.get(
                f"http://127.0.0.1:{metrics_port}/stats.json"
            ).json()
            return answer
    except httpx.HTTPError:
        return None


def errors(log: str) -> list[str]:
    """Lines of the output channel at error level.

    Leaves out vscode-languageclient's note that it ended a stopped server
    which had not exited within its 2 s grace (a loaded machine).
    """
    return [
        line
        for line in log.splitlines()
        if "[error]" in line and not line.endswith("Server process exited with signal SIGKILL.")
    ]


def starts(bench: Workbench) -> int:
    """How many times the extension started a scopecache server (from its output channel)."""
    return len(re.findall(r"\] starting \S*scopecache serve", bench.vscode.output_channel_log()))


def test_the_platform_package_installs_its_own_server_and_python_and_typescript_get_ghost_text(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    bench = code_server_for(user_settings(service), fresh_storage=True)
    storage = bench.vscode.user_data / "User" / "globalStorage" / STORAGE_NAME
    assert not storage.exists()
    bench.open_file("headers.py")
    # the first start installs the bundled server behind a progress notification
    toasts: set[str] = set()

    def running() -> bool:
        toasts.update(bench.notifications())
        return "zap" in bench.status()

    wait_until(running, "the bundled server to be installed and to run", timeout=4 * WAIT)
    bench.screenshot("installed")
    assert any("setting up the language server" in t for t in toasts), toasts
    # nothing but the extension's own environment could have provided it
    host_path = bench.vscode.extension_host_path()
    assert host_path is not None
    assert shutil.which("scopecache", path=host_path) is None, host_path
    assert shutil.which("python3", path=host_path) is not None, host_path
    venv = storage / "venv"
    (server,) = bench.vscode.language_servers()
    argv = Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")
    assert Path(argv[1].decode()) == venv / "bin" / "scopecache", argv
    record = json.loads((storage / "venv.json").read_text())
    assert record["target"] == VSIX_TARGET
    assert record["extensionVersion"] == record["scopecache"] == __version__
    log = bench.vscode.output_channel_log()
    installed = re.search(r"scopecache \S+ installed in ([0-9.]+) s", log)
    assert installed, log
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "vscode-first-start.txt").write_text(f"install: {installed.group(1)} s\n")

    bench.go_to_end()
    bench.type(TYPED)
    wait_until(lambda: bench.ghost_text() == "der(line):", "ghost text in the Python file")
    bench.screenshot("python")

    bench.open_file("headers.ts")
    bench.go_to_end()
    bench.type(TS_TYPED)
    expected = service_answer(service, TS_START + TS_TYPED)
    assert expected.startswith("der(line: string)"), expected
    try:
        wait_until(lambda: bench.ghost_text() == expected, f"ghost text {expected!r}")
    except AssertionError:
        raise AssertionError(bench.ghost_dom()) from None
    bench.screenshot("typescript")
    assert starts(bench) == 1
    assert not errors(bench.vscode.output_channel_log())


def test_without_a_suitable_python_one_message_names_what_to_install(
    code_server_for: StartCodeServer, service: ReferenceService, tmp_path: Path
) -> None:
    # the only python3 on this PATH is too old (a stand-in that answers the probe as 3.10 would)
    old = tmp_path / "old-python"
    old.mkdir()
    fake = old / "python3"
    answer = json.dumps({"executable": "/usr/bin/python3", "version": "3.10.12"})
    fake.write_text(f"#!/bin/sh\necho '{answer}'\n")
    fake.chmod(0o755)
    bench = code_server_for(user_settings(service), fresh_storage=True, path=[old])
    bench.open_file("headers.py")
    message = wait_until(
        lambda: [t for t in bench.notifications() if "needs Python" in t], "the Python message"
    )
    bench.screenshot("no-python")
    assert "Python 3.11 to 3.14" in message[0], message
    assert "python3 on PATH: Python 3.10.12" in message[0], message
    assert "Install Python 3.14" in message[0], message
    wait_until(lambda: "circle-slash" in bench.status(), "the status item to say not running")
    # no retry loop: still one message, no server, nothing installed
    bench.save()
    assert len([t for t in bench.notification_center() if "needs Python" in t]) == 1
    assert bench.vscode.language_servers() == []
    assert starts(bench) == 0
    assert not (bench.vscode.user_data / "User" / "globalStorage" / STORAGE_NAME / "venv").exists()


def test_ghost_text_appears_tab_accepts_it_and_the_status_item_shows_the_hit_share(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    from selenium.webdriver.common.keys import Keys

    bench = code_server_for(user_settings(service))
    bench.open_file("headers.py")
    # opening a Python file starts the server; meanwhile the status item says
    # "starting", never "not running"
    seen: list[str] = []

    def running() -> bool:
        seen.append(bench.status())
        return "zap" in seen[-1]

    wait_until(running, "the status item to show live numbers")
    assert bench.vscode.language_servers()
    assert not [s for s in seen if "circle-slash" in s], seen

    bench.go_to_end()
    bench.type(TYPED)
    expected = service_answer(service, START + TYPED)
    assert expected == "der(line):"
    wait_until(lambda: bench.ghost_text() == expected, f"ghost text {expected!r}")
    # ghost text is the product: no suggestion list beside it to take the Tab key
    assert not bench.suggest_widget_visible()
    bench.screenshot("ghost-text")

    bench.keys(Keys.TAB)
    wait_until(lambda: not bench.ghost_text(), "the ghost text to be accepted")
    bench.save()
    accepted = START + TYPED + expected
    assert (bench.vscode.workspace / "headers.py").read_text() == accepted

    # Enter at the end of the accepted line (VS Code indents the body): the
    # next line's suggestion
    bench.keys(Keys.ENTER)
    next_line = service_answer(service, accepted + "\n    ")
    assert next_line == 'key, _, value = line.partition(":")'
    try:
        wait_until(lambda: bench.ghost_text() == next_line, f"ghost text {next_line!r}")
    except AssertionError:
        raise AssertionError(bench.ghost_dom()) from None
    # the hit share of what was served so far, e.g. "zap  67% · upstream ok"
    wait_until(lambda: "% · upstream ok" in bench.status(), "the hit share in the status item")
    bench.screenshot("next-line")

    bench.keys(Keys.ESCAPE)
    wait_until(lambda: not bench.ghost_text(), "Esc to dismiss the ghost text")
    bench.save()
    assert (bench.vscode.workspace / "headers.py").read_text() == accepted + "\n    "
    assert bench.vscode.language_servers(), "the server is still running"
    assert starts(bench) == 1
    log = bench.vscode.output_channel_log()
    assert "Stopping server failed" not in log
    assert not errors(log), log


def test_a_go_file_gets_ghost_text_that_tab_accepts_and_the_stats_count_it_as_parsed(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    from selenium.webdriver.common.keys import Keys

    metrics_port = free_port()
    bench = code_server_for(user_settings(service, **{"scopecache.metricsPort": metrics_port}))
    # a Go file alone starts the server: the document selector covers Go
    bench.open_file("headers.go")
    wait_until(lambda: "zap" in bench.status(), "the server to run")

    bench.go_to_end()
    bench.type(GO_TYPED)
    expected = service_answer(service, GO_START + GO_TYPED)
    assert expected == "der(line string) (string, string) {"
    try:
        wait_until(lambda: bench.ghost_text() == expected, f"ghost text {expected!r}")
    except AssertionError:
        raise AssertionError(bench.ghost_dom()) from None
    assert not bench.suggest_widget_visible()
    bench.screenshot("ghost-text")

    bench.keys(Keys.TAB)
    wait_until(lambda: not bench.ghost_text(), "the ghost text to be accepted")
    bench.save()
    assert (bench.vscode.workspace / "headers.go").read_text() == GO_START + GO_TYPED + expected

    # scopecache/stats, as the metrics endpoint serves it: the Go document was
    # parsed by its grammar, not served text-only
    stats = server_stats(metrics_port)
    assert stats is not None
    go = stats["languages"]["go"]
    assert go["documents"] == 1 and go["parsed"] == 1 and go["text"] == 0, stats["languages"]
    assert go["requests"] >= 1, stats["languages"]
    assert "python" not in stats["languages"], stats["languages"]
    assert starts(bench) == 1
    assert not errors(bench.vscode.output_channel_log())


def test_the_three_commands_work_and_a_settings_change_reaches_the_server(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    bench = code_server_for(user_settings(service, **{"scopecache.server.statusPollSeconds": 1}))
    bench.open_file("headers.py")
    wait_until(lambda: "zap" in bench.status(), "the server to run")
    bench.go_to_end()
    bench.type(TYPED)
    wait_until(lambda: bench.ghost_text() == "der(line):", "ghost text")

    bench.run_command("scopecache: Show Cache Stats")
    wait_until(lambda: "Hit ratio:" in bench.vscode.output_channel_log(), "the stats report")
    # the panel scrolls to the report's end: its first lines may be out of view
    wait_until(
        lambda: "Transport:" in " ".join(bench.texts(".part.panel .monaco-editor")),
        "the report in the Output panel",
    )
    bench.screenshot("show-cache-stats")

    bench.run_command("scopecache: Clear Cache")
    toast = wait_until(
        lambda: [t for t in bench.notifications() if "cleared" in t and "cache entries" in t],
        "the Clear Cache notification",
    )
    assert re.search(r"scopecache: cleared [1-9][0-9]* cache entries", toast[0]), toast
    wait_until(lambda: "Cache: hybrid, 0 of 2048 entries" in bench.status(), "an empty cache")

    # a change in the workspace settings goes to the running server
    settings_dir = bench.vscode.workspace / ".vscode"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(json.dumps({"scopecache.cache.policy": "lru"}))
    wait_until(lambda: "Cache: lru," in bench.status(), "the server to report the lru policy")

    before = bench.vscode.language_servers()
    bench.run_command("scopecache: Restart Server")
    wait_until(
        lambda: (s := bench.vscode.language_servers()) and s != before, "a new server process"
    )
    wait_until(lambda: "zap" in bench.status() and "Cache: lru," in bench.status(),
               "the new server to run with the workspace settings")
    assert len(bench.vscode.language_servers()) == 1
    assert starts(bench) == 2
    assert not errors(bench.vscode.output_channel_log())


def test_a_killed_server_is_restarted_once_per_crash_with_backoff(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    metrics_port = free_port()
    bench = code_server_for(user_settings(service, **{"scopecache.metricsPort": metrics_port}))
    bench.open_file("headers.py")
    wait_until(lambda: "zap" in bench.status(), "the server to run")
    servers = bench.vscode.language_servers()
    assert len(servers) == 1

    for crash, delay in enumerate((500, 1000), start=1):
        os.kill(servers[0], signal.SIGKILL)
        replaced = wait_until(
            lambda old=servers: (s := bench.vscode.language_servers()) and s != old and s,
            f"a restarted server after crash {crash}",
        )
        assert len(replaced) == 1
        wait_until(lambda: "zap" in bench.status(), "the restarted server to answer")
        log = bench.vscode.output_channel_log()
        assert f"scopecache server stopped; restarting in {delay} ms" in log, log
        servers = replaced

    # the restarted server completes as the first one did, once the client has
    # opened the document on it again
    def open_python_documents() -> int:
        stats = server_stats(metrics_port) or {}
        return int(stats.get("languages", {}).get("python", {}).get("documents", 0))

    wait_until(lambda: open_python_documents() == 1, "the document open on the restarted server")
    bench.go_to_end()
    bench.type(TYPED)
    try:
        wait_until(
            lambda: bench.ghost_text() == "der(line):", "ghost text from the restarted server"
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its stats: {server_stats(metrics_port)}") from None
    bench.screenshot("after-restarts")
    log = bench.vscode.output_channel_log()
    assert log.count("restarting in") == 2, log
    assert starts(bench) == 3, log
    assert bench.vscode.language_servers() == servers
    assert "Stopping server failed" not in log
    assert bench.notifications() == []  # a crash the extension handles is no pop-up


def test_a_bad_endpoint_produces_one_clear_message(
    code_server_for: StartCodeServer,
) -> None:
    from selenium.webdriver.common.keys import Keys

    endpoint = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    bench = code_server_for({"scopecache.endpoint": endpoint})
    bench.open_file("headers.py")
    wait_until(lambda: "zap" in bench.status(), "the server to run")
    bench.go_to_end()
    bench.type("def parse_header(line):")
    bench.keys(Keys.ENTER)
    bench.type("    key, _, value = line.partition")
    wait_until(lambda: [t for t in bench.notifications() if "completion service" in t],
               "a message about the completion service")
    bench.type('(":")')
    bench.keys(Keys.ENTER)
    bench.type("    return key")
    bench.save()  # every keystroke has been through the editor by now
    bench.screenshot("bad-endpoint")
    # the server's warning is in the output channel at its own level, with one timestamp
    log = bench.vscode.output_channel_log()
    warning = re.search(
        r"^\S+ \S+ \[warning\] (lsp_server\.completion\.notify: upstream: .*)$", log, re.M
    )
    assert warning, log
    assert not re.match(r"\d{4}-\d\d-\d\d", warning.group(1))
    assert not errors(log), log
    # a toast hides itself after a while (sooner than the rest of this test
    # takes on a loaded machine): count in the notification center
    messages = [t for t in bench.notification_center() if "scopecache" in t]
    assert len(messages) == 1, messages
    assert "completion service" in messages[0], messages
    assert bench.vscode.language_servers(), "the server keeps running"


def test_a_fixed_server_command_replaces_the_pending_restart_of_the_broken_one(
    code_server_for: StartCodeServer, service: ReferenceService
) -> None:
    # a command that exits at once: the extension retries it with growing delays
    bench = code_server_for(user_settings(service, **{"scopecache.server.command": ["false"]}))
    bench.open_file("headers.py")
    wait_until(
        lambda: "restarting in 8000 ms" in bench.vscode.output_channel_log(),
        "five failed starts (0.5 + 1 + 2 + 4 s of backoff)",
        timeout=60,
    )
    assert "sync~spin" in bench.status()  # restarting, not "not running"
    failures = [t for t in bench.notifications() if "did not start" in t]
    assert len(failures) == 1 and "scopecache.server.command" in failures[0], failures

    # the fixed command, set while the sixth attempt waits its 8 s
    command = [str(SCOPECACHE_BIN / "scopecache"), "serve"]
    settings_dir = bench.vscode.workspace / ".vscode"
    settings_dir.mkdir()
    (settings_dir / "settings.json").write_text(json.dumps({"scopecache.server.command": command}))
    fixed = f"] starting {' '.join(command)} --log-level INFO"
    wait_until(lambda: fixed in bench.vscode.output_channel_log(), "the fixed command to start")
    wait_until(lambda: "zap" in bench.status(), "the server to run")
    bench.go_to_end()
    bench.type(TYPED)
    wait_until(lambda: bench.ghost_text() == "der(line):", "ghost text")
    bench.screenshot("fixed-command")

    log = bench.vscode.output_channel_log()
    assert "pending restart of the stopped server cancelled" in log, log
    # five starts of the broken command, one of the fixed one: no stale start after it
    assert log.count("] starting false --log-level INFO") == 5, log
    assert log.count(fixed) == 1, log
    assert log.rindex(fixed) > log.rindex("] starting false")
    assert "Stopping server failed" not in log, log
    assert len(bench.vscode.language_servers()) == 1
    assert len([t for t in bench.notifications() if "did not start" in t]) <= 1


def acceptance_now(metrics_port: int) -> dict[str, Any]:
    """The ``acceptance`` object of the server's stats (empty before it answers)."""
    stats = server_stats(metrics_port) or {}
    answer: dict[str, Any] = stats.get("acceptance", {})
    return answer


def accepted_since(
    before: dict[str, Any], metrics_port: int, kind: str, times: int = 1
) -> dict[str, Any] | None:
    """The acceptance stats once ``times`` more accepts of ``kind`` were counted, else None."""
    now = acceptance_now(metrics_port)
    kinds, was = now.get("byKind", {}), before.get("byKind", {})
    return now if kinds.get(kind, 0) >= was.get(kind, 0) + times else None


def chars_by_source(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Accepted characters added per source between two acceptance stats."""
    old = before.get("bySource", {})
    added = {
        source: counts["acceptedChars"] - old.get(source, {}).get("acceptedChars", 0)
        for source, counts in after.get("bySource", {}).items()
    }
    return {source: n for source, n in added.items() if n}


def test_full_word_and_line_accepts_reach_the_stats_and_half_a_deleted_line_is_half_kept(
    code_server_for: Callable[[dict[str, Any]], Workbench], service: ReferenceService
) -> None:
    from selenium.webdriver.common.keys import Keys

    metrics_port = free_port()
    bench = code_server_for(
        user_settings(
            service,
            **{
                "scopecache.metricsPort": metrics_port,
                # every suggestion comes from what was typed: no prefetch
                "scopecache.speculative.enabled": False,
                # short enough to wait for, long enough for the keys typed before them
                "scopecache.acceptance.shortWindowSeconds": 10,
                "scopecache.acceptance.longWindowSeconds": 15,
            },
        )
    )
    bench.open_file("headers.py")
    wait_until(lambda: "zap" in bench.status(), "the server to run")
    bench.go_to_end()
    bench.type(TYPED)
    wait_until(lambda: bench.ghost_text() == "der(line):", "ghost text")
    start = acceptance_now(metrics_port)

    # Tab: a full accept, reported by the item's own command
    bench.keys(Keys.TAB)
    after_tab = wait_until(lambda: accepted_since(start, metrics_port, "full"), "the Tab accept")
    assert after_tab["accepted"] == start["accepted"] + 1
    (tab_source, tab_chars), = chars_by_source(start, after_tab).items()
    assert tab_chars == len("der(line):"), tab_source

    # Enter (VS Code indents the body): a suggestion of two lines; Alt+L takes the first
    bench.keys(Keys.ENTER)
    first_line = 'key, _, value = line.partition(":")'
    wait_until(lambda: bench.ghost_text() == first_line, f"ghost text {first_line!r}")
    bench.screenshot("two-line-suggestion")
    bench.chord(Keys.ALT, "l")
    after_line = wait_until(
        lambda: accepted_since(after_tab, metrics_port, "line"), "the line accept"
    )
    (line_source, line_chars), = chars_by_source(after_tab, after_line).items()
    assert line_chars == len(first_line) + 1, line_source  # with its line break
    assert after_line["bySource"][line_source]["accepted"] >= 1

    # Ctrl+Right twice: the next line's indentation, then "return"
    wait_until(lambda: bench.ghost_text().strip().startswith("return"), "the second line")
    bench.chord(Keys.CONTROL, Keys.RIGHT)
    wait_until(lambda: accepted_since(after_line, metrics_port, "word"), "the first word accept")
    bench.chord(Keys.CONTROL, Keys.RIGHT)
    after_words = wait_until(
        lambda: accepted_since(after_line, metrics_port, "word", 2), "the second word accept"
    )
    assert sum(chars_by_source(after_line, after_words).values()) == len("    return")
    rest = bench.ghost_text()
    assert rest.startswith(" key"), rest
    bench.screenshot("after-word-accepts")

    # Tab takes the rest of the line; then half of it is deleted before the short window
    bench.keys(Keys.TAB)
    after_rest = wait_until(
        lambda: accepted_since(after_words, metrics_port, "full"), "the accept of the rest"
    )
    assert sum(chars_by_source(after_words, after_rest).values()) == len(rest)
    half = len(rest) // 2
    for _ in range(half):
        bench.keys(Keys.BACKSPACE)
    bench.save()
    text = (bench.vscode.workspace / "headers.py").read_text()
    assert text.endswith("\n    return" + rest[: len(rest) - half]), text

    settled = wait_until(
        lambda: (a := acceptance_now(metrics_port)).get("pending") == 0 and a,
        "every accept's windows to be counted",
    )
    accepted_chars = settled["acceptedChars"] - start["acceptedChars"]
    assert accepted_chars == len("der(line):") + len(first_line) + 1 + len("    return") + len(rest)
    assert settled["measuredChars30s"] - start["measuredChars30s"] == accepted_chars
    assert settled["retainedChars30s"] - start["retainedChars30s"] == accepted_chars - half
    assert settled["retainedChars120s"] - start["retainedChars120s"] == accepted_chars - half
    assert settled["byKind"] == {"full": 2, "word": 2, "line": 1}

    # and the stats report shows it
    bench.run_command("scopecache: Show Cache Stats")
    wait_until(lambda: "Accepted: " in bench.vscode.output_channel_log(), "the acceptance report")
    log = bench.vscode.output_channel_log()
    report = r"Accepted: \d+ of \d+ shown \(\d+%\), \d+ characters \(full 2, word 2, line 1\); kept"
    assert re.search(report, log), log
    assert "Accepted by source: " in log
    assert not errors(log), log


def test_with_nothing_configured_the_status_item_says_no_server_then_names_the_one_started_later(
    code_server_for: StartCodeServer, tmp_path: Path
) -> None:
    from tests.support.code_model import ModelUnavailable, ensure
    from tests.support.typing_session import code_model_server

    try:
        model = ensure()
    except ModelUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the code model could not be fetched: {exc}")
        pytest.skip(f"the code model could not be fetched: {exc}")
    port = free_port()
    # no endpoint: only the ports discovery looks at (llama.cpp's, once it runs)
    bench = code_server_for(
        {"scopecache.discovery.ports": [port], "scopecache.server.statusPollSeconds": 1}
    )
    bench.open_file("headers.py")
    wait_until(lambda: "no server" in bench.status(), "the status item to say no server")
    assert "circle-slash" in bench.status() and "set scopecache.endpoint" in bench.status()
    llama = tmp_path / "llama"
    llama.mkdir()
    server = code_model_server(llama, model, threads=1)
    server.port = port
    with server:
        # found without a restart of the editor or its language server. llama.cpp
        # listens before its model is loaded: the item says "llama.cpp loading"
        # then, and keys typed before it is ready ask nothing
        wait_until(
            lambda: "llama.cpp" in (text := bench.status()) and "loading" not in text,
            "the status item to name llama.cpp, its model loaded",
        )
        bench.screenshot("found")
        from selenium.webdriver.common.keys import Keys

        bench.go_to_end()
        bench.type("def add(a, b):")
        bench.keys(Keys.ENTER)  # VS Code indents the body
        bench.type("return ")
        wait_until(bench.ghost_text, "ghost text from the server it found")
    assert starts(bench) == 1
    assert not errors(bench.vscode.output_channel_log())
