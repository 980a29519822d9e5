"""Load the reference service's corpus from files and directories.

Directories are walked (skipping VCS, virtualenv and cache folders); binary
files (a NUL byte, or not UTF-8) and files over ``MAX_FILE_BYTES`` are
skipped; the whole corpus stops growing at ``MAX_CORPUS_BYTES`` (the
``--corpus-limit-mb`` option of ``scopecache upstream``). A
scopecache trace (``*.jsonl`` whose first line is the trace header) contributes
the final text of every file it records, so a service can answer a replay
with the code the user went on to write.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from lsp_server.kit.reference.engine import CorpusEngine

logger = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000
MAX_CORPUS_BYTES = 16_000_000
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache",
     ".ruff_cache", ".pytest_cache", "build", "dist", ".tox"}
)
_SNIFF = 8192


def iter_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Every regular file under ``paths`` in a stable (sorted) order."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    yield Path(root) / name
        else:
            logger.warning("corpus path not found: %s", path)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it is binary, not UTF-8 or too large."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError as exc:
        logger.warning("cannot read corpus file %s: %s", path, exc)
        return None
    if b"\x00" in data[:_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def trace_documents(text: str) -> list[str] | None:
    """The ``final`` texts of a scopecache trace, or None if ``text`` is not one."""
    first = text.split("\n", 1)[0]
    try:
        header = json.loads(first)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("format") != "scopecache-trace":
        return None
    final = header.get("final") or {}
    return [v for v in final.values() if isinstance(v, str)] if isinstance(final, dict) else []


def load_documents(
    paths: Iterable[str | os.PathLike[str]], *, limit_bytes: int = MAX_CORPUS_BYTES
) -> list[str]:
    """Texts of every usable corpus file under ``paths``, up to ``limit_bytes`` of text."""
    docs: list[str] = []
    total = 0
    for path in iter_files(paths):
        text = read_text(path)
        if text is None:
            continue
        if path.suffix in (".jsonl", ".trace"):
            from_trace = trace_documents(text)
            if from_trace is not None:
                docs.extend(from_trace)
                total += sum(len(d) for d in from_trace)
                continue
        if total + len(text) > limit_bytes:
            logger.warning(
                "corpus limit of %.1f MB reached; skipping %s and the rest "
                "(raise it with --corpus-limit-mb)",
                limit_bytes / 1e6,
                path,
            )
            break
        docs.append(text)
        total += len(text)
    return docs


def engine_for(
    paths: Iterable[str | os.PathLike[str]], *, limit_bytes: int = MAX_CORPUS_BYTES
) -> CorpusEngine:
    """A ``CorpusEngine`` over the files under ``paths`` (at most ``limit_bytes`` of text)."""
    docs = load_documents(paths, limit_bytes=limit_bytes)
    engine = CorpusEngine(docs)
    logger.info("corpus: %d documents, %d characters", engine.documents, engine.size)
    return engine
