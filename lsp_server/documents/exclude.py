"""Files that never leave the machine: matched by the ``exclude`` globs.

A document whose path matches is never sent upstream, never cached and never
recorded in a trace. Patterns match the file name (``.env``, ``*.pem``) or,
when they contain a slash, the whole path (``**/secrets/**``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit


def uri_path(uri: str) -> str:
    """The path part of a document URI (or the URI itself when it has none)."""
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme else uri


@lru_cache(maxsize=4096)
def _is_excluded(uri: str, patterns: tuple[str, ...]) -> bool:
    return _matches(uri, patterns)


def is_excluded(uri: str, patterns: Sequence[str]) -> bool:
    """True when the document at ``uri`` matches one of ``patterns`` (memoized per URI)."""
    return _is_excluded(uri, tuple(patterns))


def _matches(uri: str, patterns: Sequence[str]) -> bool:
    path = uri_path(uri)
    name = PurePosixPath(path).name
    for pattern in patterns:
        if "/" in pattern:
            if fnmatchcase(path, pattern) or fnmatchcase(path, pattern.removeprefix("**/")):
                return True
            # "**/secrets/**" also means "any directory called secrets"
            core = pattern.strip("*/")
            if core and f"/{core}/" in path:
                return True
        elif fnmatchcase(name, pattern):
            return True
    return False


# Assignments of credentials, private keys and the shapes of well-known tokens.
_SECRET_TEXT = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b(?:api[_-]?key|secret|token|passw(?:or)?d|credential)s?\w*[\"']?\s*[:=]\s*[\"'][^\"'\s]{8,}"
    r"|\b(?:sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abpr]-[A-Za-z0-9-]{10,})",
    re.IGNORECASE,
)


def looks_secret(text: str) -> bool:
    """True when ``text`` seems to hold a credential (a key, token or password literal).

    Used for text that would leave the machine as context from another file:
    such a chunk is left out rather than redacted.
    """
    return _SECRET_TEXT.search(text) is not None
