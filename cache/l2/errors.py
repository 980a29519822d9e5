"""The L2 package's own exceptions.

Stores map ``sqlite3`` and ``redis`` errors to these at their boundary, and
the ``L2Store`` base class turns them into misses plus a "down" state, so a
caller of ``get``/``put`` never sees any of them::

    L2Error
    ├── L2Unavailable      the store cannot be reached or opened (down, retried)
    │   └── L2ReadOnly     the file or directory cannot be written (disk full, read-only)
    ├── L2Corrupt          the store's file is damaged; it is moved aside and recreated
    ├── L2EntryRejected    one entry was refused (too large, malformed); the store stays up
    └── L2MissingExtra     an optional dependency is not installed (raised at construction)
"""

from __future__ import annotations


class L2Error(Exception):
    """Base of every error raised inside the L2 stores."""


class L2Unavailable(L2Error):
    """The store cannot be reached or opened right now."""


class L2ReadOnly(L2Unavailable):
    """The store exists but cannot be written (read-only location or full disk)."""


class L2Corrupt(L2Error):
    """The store's data is damaged beyond use."""


class L2EntryRejected(L2Error):
    """A single entry was refused; the store itself is fine."""


class L2MissingExtra(L2Error):
    """An optional dependency of a store is not installed."""
