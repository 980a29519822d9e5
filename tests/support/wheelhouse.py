"""The server as a wheel, and its dependencies as a local wheelhouse.

The editor install tests install the server as a user would, into a fresh
virtual environment with pip and every dependency, but offline and fast: pip
takes the dependencies from a wheelhouse (``PIP_FIND_LINKS`` with
``PIP_NO_INDEX``). The wheelhouse is made once per dependency set and Python
version with ``pip wheel`` (which needs the package index that once) and
kept outside the clone, under
``${SCOPECACHE_TOOLS_DIR:-${XDG_CACHE_HOME:-~/.cache}/scopecache/tools}/wheelhouse-<key>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


class WheelhouseError(Exception):
    """The wheel or the wheelhouse could not be made (no package index, no build tools)."""


def tools_dir() -> Path:
    """Where heavy downloads are cached, outside the clone."""
    if env := os.environ.get("SCOPECACHE_TOOLS_DIR"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "scopecache" / "tools"


def _pip(*args: str, timeout: float) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise WheelhouseError(f"pip {' '.join(args)}: {result.stderr[-2000:]}")


def project_wheel(out: Path) -> Path:
    """This checkout built as a wheel into ``out`` (``pip wheel --no-deps``)."""
    out.mkdir(parents=True, exist_ok=True)
    _pip("wheel", "--no-deps", "--quiet", str(REPO), "--wheel-dir", str(out), timeout=600)
    wheels = sorted(out.glob("scopecache-*.whl"))
    if not wheels:
        raise WheelhouseError(f"pip wheel made no scopecache wheel in {out}")
    return wheels[-1]


def _key(extras: tuple[str, ...]) -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    text = "\n".join([sys.platform, f"{sys.version_info[0]}.{sys.version_info[1]}", *wanted])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def dependency_wheelhouse(wheel: Path, extras: tuple[str, ...] = ()) -> Path:
    """A directory with wheels of every dependency of ``wheel`` (for this Python)."""
    house = tools_dir() / f"wheelhouse-{_key(extras)}"
    done = house / ".complete"
    if done.exists():
        return house
    scratch = house.with_name(house.name + ".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    requirement = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    _pip("wheel", "--quiet", requirement, "--wheel-dir", str(scratch), timeout=900)
    for own in scratch.glob("scopecache-*.whl"):
        own.unlink()  # the project's wheel changes with every edit: never serve it from here
    shutil.rmtree(house, ignore_errors=True)
    scratch.rename(house)
    done.touch()
    return house
