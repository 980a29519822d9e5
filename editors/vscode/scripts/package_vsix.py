"""Package the VS Code extension for one platform, with the server inside.

A platform ``.vsix`` carries ``server/``: the scopecache wheel built from
this checkout and every dependency as a wheel for that platform, for each
Python the extension may find (3.11 to 3.14), plus pip's own wheel and a
``manifest.json`` that tells the extension what it holds. On first start the
extension installs them offline into a private virtualenv, so a user needs
only a Python 3.11+, nothing from the network.

    python scripts/package_vsix.py                       # this machine's target
    python scripts/package_vsix.py --target linux-arm64  # one target
    python scripts/package_vsix.py --all                 # every target (make vsix-all)

The wheels come from ``pip download --only-binary :all: --platform ...``
against the package index (pip's cache makes a second run quick); each
``.vsix`` lands in ``editors/vscode/scopecache-<target>.vsix``. The targets
are the VS Code platforms the tree-sitter wheels exist for: the core
``tree-sitter`` has no wheels for linux-armhf or alpine-arm64. Run ``npm ci``
(``make vscode``) first.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent
SERVER_DIR = HERE / "server"
WHEELS = SERVER_DIR / "wheels"
#: the Pythons a bundle has wheels for; compiled dependencies (tree-sitter,
#: cffi) ship one wheel per CPython version
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
#: what the extension installs: the server with every grammar its languages need
EXTRAS = "languages"
#: distributions an editor's install never carries: the reference service's
#: certificate tooling (the ``tls`` extra; cryptography alone is some 16 MB)
NOT_FOR_EDITORS = frozenset({"trustme", "cryptography"})
#: VS Code 1.91 needs glibc 2.28 and macOS 10.15 (11 on Apple silicon); musl 1.2 on Alpine
GLIBC_MINOR = 28


def _manylinux(arch: str) -> list[str]:
    # pip expands only the legacy aliases, so every glibc version up to ours is named
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_MINOR, 4, -1)]
    return [*tags, f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]


def _musllinux(arch: str) -> list[str]:
    return [f"musllinux_1_{minor}_{arch}" for minor in (2, 1, 0)]


#: VS Code target -> the wheel platform tags that run there (pip expands macOS by itself)
TARGETS: dict[str, list[str]] = {
    "linux-x64": _manylinux("x86_64"),
    "linux-arm64": _manylinux("aarch64"),
    "alpine-x64": _musllinux("x86_64"),
    "darwin-x64": ["macosx_10_15_x86_64"],
    "darwin-arm64": ["macosx_11_0_arm64"],
    "win32-x64": ["win_amd64"],
    "win32-arm64": ["win_arm64"],
}


def host_target() -> str:
    """The VS Code target of this machine."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    if arch is None or system is None:
        raise SystemExit(f"package_vsix: no VS Code target for {sys.platform}/{machine}")
    if system == "linux" and platform.libc_ver()[0] != "glibc":
        system = "alpine"
    target = f"{system}-{arch}"
    if target not in TARGETS:
        raise SystemExit(f"package_vsix: the server's wheels do not exist for {target}")
    return target


def _run(args: Sequence[str | Path], cwd: Path | None = None) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=cwd, check=True)


def build_wheel(out: Path) -> Path:
    """The scopecache wheel of this checkout."""
    _run([sys.executable, "-m", "build", "--quiet", "--wheel", "--outdir", out, REPO])
    (wheel,) = out.glob("scopecache-*-py3-none-any.whl")
    return wheel


def unwanted_wheels(wheels: Path) -> list[str]:
    """The wheels in ``wheels`` of a distribution in ``NOT_FOR_EDITORS``."""
    return sorted(
        w.name for w in wheels.glob("*.whl")
        if w.name.split("-", 1)[0].lower().replace("_", "-") in NOT_FOR_EDITORS
    )  # fmt: skip


def bundle(target: str, wheel: Path) -> dict[str, object]:
    """Fill ``server/`` with the wheels of ``target``; returns the manifest."""
    version = wheel.name.split("-")[1]
    shutil.rmtree(SERVER_DIR, ignore_errors=True)
    WHEELS.mkdir(parents=True)
    platforms = [arg for tag in TARGETS[target] for arg in ("--platform", tag)]
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:"]
    for_target = ["--implementation", "cp", *platforms]
    requirement = f"scopecache[{EXTRAS}] @ {wheel.resolve().as_uri()}"
    for python in PYTHONS:
        _run([*download, "--dest", WHEELS, *for_target, "--python-version", python, requirement])
    unwanted = unwanted_wheels(WHEELS)
    if unwanted:
        raise SystemExit(
            f"package_vsix: scopecache[{EXTRAS}] pulled in {', '.join(unwanted)}; the "
            "reference service's TLS tooling belongs in the tls extra, not in an editor"
        )
    # pip's own wheel: the extension runs it from the bundle (python pip.whl/pip),
    # so the private environment needs neither ensurepip nor network
    _run([*download, "--dest", WHEELS, "--no-deps", "pip"])
    (pip_wheel,) = WHEELS.glob("pip-*.whl")
    # what the extension will do, for every Python: resolve from the bundle alone
    offline = ["--no-index", "--find-links", WHEELS, f"scopecache[{EXTRAS}]=={version}"]
    with tempfile.TemporaryDirectory(prefix="scopecache-offline-") as scratch:
        for python in PYTHONS:
            _run([*download, "--dest", scratch, *for_target, "--python-version", python, *offline])
    manifest: dict[str, object] = {
        "target": target,
        "scopecache": version,
        "requirement": f"scopecache[{EXTRAS}]=={version}",
        "pythons": list(PYTHONS),
        "pip": pip_wheel.name,
    }
    (SERVER_DIR / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def package(target: str) -> Path:
    """``vsce package --target`` over what ``server/`` holds now."""
    out = HERE / f"scopecache-{target}.vsix"
    vsce = HERE / "node_modules" / ".bin" / "vsce"
    _run([vsce, "package", "--no-dependencies", "--target", target, "-o", out], cwd=HERE)
    return out


def main(argv: list[str] | None = None) -> int:
    """Build the wheel once, then one ``.vsix`` per target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--target", action="append", choices=sorted(TARGETS))
    group.add_argument("--all", action="store_true", help="every target")
    parser.add_argument("--wheel", type=Path, help="the scopecache wheel (default: build one)")
    args = parser.parse_args(argv)
    targets = sorted(TARGETS) if args.all else (args.target or [host_target()])

    _run(["npm", "run", "--silent", "compile"], cwd=HERE)
    try:
        with tempfile.TemporaryDirectory(prefix="scopecache-wheel-") as tmp:
            wheel = args.wheel or build_wheel(Path(tmp))
            for target in targets:
                started = time.monotonic()
                bundle(target, wheel)
                vsix = package(target)
                size = vsix.stat().st_size / 2**20
                took = time.monotonic() - started
                print(f"{vsix.name}: {size:.1f} MiB in {took:.0f} s", flush=True)
    finally:
        # a later `vsce package` without a target must not pick up one platform's wheels
        shutil.rmtree(SERVER_DIR, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
