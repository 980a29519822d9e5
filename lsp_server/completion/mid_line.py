"""Whether a suggestion may be shown with text after the cursor (``completion.midLine``).

Ghost text drawn between the cursor and existing text reads as if that text
were being replaced, and accepting it usually leaves a broken line. So, by
default (``"closers"``), a suggestion is shown in the middle of a line only
when what follows the cursor is closing brackets, quotes and whitespace
(optionally ending in one of ``; , :``), as an editor's auto-pairing leaves
them (``foo(|)``, ``"|"``), or when the suggestion itself ends with that
text (it rewrites the rest of the line, which is then trimmed off).
``"always"`` shows every suggestion, ``"never"`` none with any non-blank
text after the cursor.
"""

from __future__ import annotations

import re

from lsp_server.settings import MidLine

#: what may follow the cursor in ``"closers"`` mode
_CLOSERS = re.compile(r"\s*[)\]}>\"'`]*\s*[;,:]?\s*")


def at_line_end(line_suffix: str) -> bool:
    """Nothing but whitespace follows the cursor."""
    return not line_suffix.strip()


def closers_only(line_suffix: str) -> bool:
    """Only closing brackets, quotes and whitespace follow the cursor."""
    return _CLOSERS.fullmatch(line_suffix) is not None


def position_allowed(mode: MidLine, line_suffix: str) -> bool:
    """Whether any suggestion could be shown at a cursor followed by ``line_suffix``.

    False means the request need not be answered at all (``"never"`` with
    text after the cursor); True leaves the decision to ``suggestion_allowed``.
    """
    return mode != "never" or at_line_end(line_suffix)


def suggestion_allowed(mode: MidLine, line_suffix: str, text: str) -> bool:
    """Whether ``text`` (the untrimmed suggestion) may be shown before ``line_suffix``."""
    if at_line_end(line_suffix) or mode == "always":
        return True
    if mode == "never":
        return False
    if closers_only(line_suffix):
        return True
    first_line = text.split("\n", 1)[0]
    return first_line.rstrip().endswith(line_suffix.rstrip())
