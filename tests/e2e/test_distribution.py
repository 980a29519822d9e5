"""The distribution as a registry and a user get it: ``python -m build``, then ``pipx install``.

``python -m build`` makes the sdist and builds the wheel from it (so the
sdist alone is enough to rebuild the package); ``twine check`` reads both as
PyPI would. The wheel is then installed the way the README tells a user to,
``pipx install dist/scopecache-*.whl``, into a pipx home of its own (a fresh
virtualenv with the real dependencies from the package index; pip's cache
makes that quick), and the installed ``scopecache`` answers a completion
from the reference service. Nothing of this checkout is on that
environment's ``sys.path``.
"""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.server.language_server import __version__
from tests.support.greet import COLUMN, EXPECTED, LINE, TEXT, URI

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
#: what the wheel may hold at its top level: the three packages and its metadata
PACKAGES = {"lsp_server", "cache", "transport"}


@dataclass(frozen=True)
class Dists:
    """The sdist and the wheel ``python -m build`` made."""

    sdist: Path
    wheel: Path

    def wheel_names(self) -> list[str]:
        with zipfile.ZipFile(self.wheel) as zf:
            return zf.namelist()

    def wheel_metadata(self) -> Message:
        with zipfile.ZipFile(self.wheel) as zf:
            text = zf.read(f"scopecache-{__version__}.dist-info/METADATA").decode()
        return email.parser.Parser().parsestr(text)

    def wheel_file(self, name: str) -> str:
        with zipfile.ZipFile(self.wheel) as zf:
            return zf.read(f"scopecache-{__version__}.dist-info/{name}").decode()


def run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    result = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, REPO)
    (sdist,) = out.glob("scopecache-*.tar.gz")
    (wheel,) = out.glob("scopecache-*-py3-none-any.whl")
    return Dists(sdist, wheel)


@pytest.fixture(scope="module")
def pipx_bin(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The ``bin`` directory of a pipx home where only the wheel was installed."""
    root = tmp_path_factory.mktemp("pipx")
    env = {
        **os.environ,
        "PIPX_HOME": str(root / "home"),
        "PIPX_BIN_DIR": str(root / "bin"),
        "PIPX_MAN_DIR": str(root / "man"),
    }
    run(sys.executable, "-m", "pipx", "install", "--python", sys.executable, dists.wheel, env=env)
    yield root / "bin"


def test_both_dists_are_named_for_the_servers_version_and_pass_twine_check(
    dists: Dists,
) -> None:
    assert dists.sdist.name == f"scopecache-{__version__}.tar.gz"
    assert dists.wheel.name == f"scopecache-{__version__}-py3-none-any.whl"
    checked = run(sys.executable, "-m", "twine", "check", "--strict", dists.sdist, dists.wheel)
    assert checked.count("PASSED") == 2, checked


def test_the_wheel_metadata_has_what_a_registry_page_shows(dists: Dists) -> None:
    meta = dists.wheel_metadata()
    assert meta["Name"] == "scopecache"
    assert meta["Version"] == __version__
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Requires-Python"] == ">=3.11"
    classifiers = meta.get_all("Classifier") or []
    for minor in (11, 12, 13, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert set(urls) >= {"Homepage", "Source", "Issues"}
    assert all(u.startswith("https://") for u in urls.values())
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# scopecache\n")
    assert set(meta.get_all("Provides-Extra") or []) >= {"all", "languages", "redis", "metrics"}
    assert "scopecache = lsp_server.cli:main" in dists.wheel_file("entry_points.txt")


def test_the_wheel_holds_the_three_packages_and_their_data_but_no_tests_or_tools(
    dists: Dists,
) -> None:
    names = dists.wheel_names()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == PACKAGES | {f"scopecache-{__version__}.dist-info"}
    for data in (
        "lsp_server/py.typed",
        "lsp_server/observe/dashboard.html",
        "lsp_server/samples/retry.py",
        "cache/py.typed",
        "transport/py.typed",
    ):
        assert data in names
    assert not [n for n in names if "/tests/" in n or "conftest" in n or n.endswith(".pyc")]


def test_the_sdist_holds_the_sources_the_license_and_the_readme(dists: Dists) -> None:
    import tarfile

    with tarfile.open(dists.sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "LICENSE", "lsp_server/cli.py"} <= names
    assert not [n for n in names if n.startswith(("tests/", "editors/", ".ci/"))]


def test_pipx_installed_scopecache_prints_the_package_version(pipx_bin: Path) -> None:
    assert run(pipx_bin / "scopecache", "--version") == f"scopecache {__version__}\n"


async def test_pipx_installed_scopecache_serves_a_completion(
    pipx_bin: Path, greet_process: ReferenceProcess, tmp_path: Path
) -> None:
    options = {
        "endpoint": greet_process.url,
        "transport": {"caFile": greet_process.ca_file},
        "cache": {"l2": "none"},
    }
    # away from the checkout, so nothing of it can be imported by accident
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": ""}
    command = [str(pipx_bin / "scopecache"), "serve"]
    async with ServerProcess(options, command=command, env=env) as server:
        assert server.initialize_result is not None
        info = server.initialize_result.server_info
        assert info is not None and info.version == __version__
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED
