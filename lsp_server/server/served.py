"""The suggestions that went out, kept so that an acceptance can be attributed.

``scopecache.accepted`` names an item id that the editor got with a
suggestion; ``ServedItems`` maps the latest ids back to what was shown.
The server holds one; ``suggestions`` remembers and looks up in it.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import NamedTuple

#: suggestions remembered for ``scopecache.accepted``
SERVED_ITEMS_KEPT = 256


class ServedItem(NamedTuple):
    """A suggestion that went out, so an acceptance can be attributed (one per answer)."""

    uri: str
    line: int
    character: int
    text: str
    source: str


class ServedItems:
    """The latest suggestions that went out, by the item id the editor reports back."""

    def __init__(self, kept: int = SERVED_ITEMS_KEPT) -> None:
        self._kept = kept
        self._items: OrderedDict[str, ServedItem] = OrderedDict()
        self._ids = itertools.count(1)

    def remember(self, item: ServedItem) -> str:
        """Keep ``item`` (forgetting the oldest beyond ``kept``); returns its id."""
        item_id = f"s{next(self._ids)}"
        self._items[item_id] = item
        while len(self._items) > self._kept:
            self._items.popitem(last=False)
        return item_id

    def get(self, item_id: str) -> ServedItem | None:
        """The item served as ``item_id``, or None when unknown or forgotten."""
        return self._items.get(item_id)
