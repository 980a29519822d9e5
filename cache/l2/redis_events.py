"""The events the Redis L2 puts on its stream, and how a reader applies each once.

An event is a flat stream entry::

    op   "put" | "del"
    id   a unique op_id (uuid4 hex): redelivery of the same event is recognised
    src  the writing session's id: a session skips its own events
    key  the key's fingerprints (JSON), never source text
    v    the entry's JSON (``put`` only; already size-capped by the writer)

``OpWindow`` remembers the most recent op_ids so an event delivered twice (a
claim after a slow consumer, a duplicated XADD) is applied once.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass

from cache.entry import CachedCompletion
from cache.l2.base import L2Change, key_from_json, key_to_json

#: op_ids remembered per session for de-duplication
OP_WINDOW = 8192


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One decoded stream event."""

    op_id: str
    source: str
    change: L2Change


def encode_put(entry: CachedCompletion, value: str, source: str) -> dict[str, str]:
    """Stream fields announcing ``entry`` (whose JSON is ``value``)."""
    return {"op": "put", "id": uuid.uuid4().hex, "src": source,
            "key": key_to_json(entry.key), "v": value}


def encode_invalidate(key_json: str, source: str) -> dict[str, str]:
    """Stream fields announcing that the entry under a key is gone."""
    return {"op": "del", "id": uuid.uuid4().hex, "src": source, "key": key_json}


def decode(fields: object) -> StreamEvent:
    """Parse stream fields (bytes or str); raises ValueError on anything malformed."""
    if not isinstance(fields, dict):
        raise ValueError("stream entry has no fields")
    text: dict[str, str] = {}
    for name, value in fields.items():
        try:
            name_s = name.decode() if isinstance(name, bytes) else str(name)
            text[name_s] = value.decode() if isinstance(value, bytes) else str(value)
        except UnicodeDecodeError as exc:
            raise ValueError("stream entry is not UTF-8") from exc
    op, op_id, source = text.get("op"), text.get("id"), text.get("src")
    if not op_id or not source or op not in ("put", "del"):
        raise ValueError(f"stream entry lacks op/id/src: {sorted(text)}")
    key = key_from_json(text.get("key", ""))
    if op == "del":
        return StreamEvent(op_id, source, L2Change("invalidate", key))
    entry = CachedCompletion.from_json(text.get("v", ""))
    if entry.key != key:
        raise ValueError("stream entry's value does not match its key")
    return StreamEvent(op_id, source, L2Change("put", key, entry))


class OpWindow:
    """The most recent op_ids seen, bounded."""

    def __init__(self, size: int = OP_WINDOW) -> None:
        self.size = size
        self._seen: OrderedDict[str, None] = OrderedDict()

    def first_time(self, op_id: str) -> bool:
        """True the first time ``op_id`` is offered (within the window), False after."""
        if op_id in self._seen:
            return False
        self._seen[op_id] = None
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return True
