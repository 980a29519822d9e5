"""The small "greet" scenario many end-to-end tests share.

A corpus the reference service completes from, the document a test opens,
and what the service answers at the end of its second line.
"""

from __future__ import annotations

from typing import Any

CORPUS = """\
def greet(name):
    message = "Hello, " + name.title()
    return message.upper()
"""
URI = "file:///work/project/app.py"
#: the document as the test opens it; the cursor is at its very end
TEXT = "def greet(name):\n    message = "
LINE, COLUMN = 1, 14
EXPECTED = '"Hello, " + name.title()'


def requests_seen(stats: dict[str, Any]) -> int:
    """Completion requests the reference service received, from its ``/__stats``."""
    return int(stats["requests"]["total"])
