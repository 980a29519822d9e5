"""Small text helpers shared by tests."""

from __future__ import annotations

from collections.abc import Sequence


def lines_text(lines: Sequence[str]) -> str:
    """The text of whole lines, each ending with a newline (a line anchor's context)."""
    return "".join(f"{line}\n" for line in lines)
