"""Writing a scopecache-trace v1 file, line by line (JSON Lines, UTF-8).

The writer records exactly what it is given: never pass settings,
environment values or credentials in a header's ``meta``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from lsp_server.observe.trace.format import Event, Trace, TraceHeader, event_to_json


class TraceWriter:
    """Write a trace line by line (JSON Lines, UTF-8).

    Records exactly what it is given: never pass settings or credentials in
    ``meta``. Use as a context manager, or call ``close``.
    """

    def __init__(self, target: str | Path | IO[str], header: TraceHeader) -> None:
        if isinstance(target, str | Path):
            self._fh: IO[str] = open(target, "w", encoding="utf-8", newline="\n")
            self._owned = True
        else:
            self._fh = target
            self._owned = False
        self._write(header.to_json())
        self.count = 0

    def _write(self, data: dict[str, Any]) -> None:
        self._fh.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")

    def write(self, event: Event) -> None:
        """Append one event."""
        self._write(event_to_json(event))
        self.count += 1

    def close(self) -> None:
        """Flush, and close the file if the writer opened it."""
        self._fh.flush()
        if self._owned:
            self._fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_trace(path: str | Path, trace: Trace) -> None:
    """Write a whole in-memory trace."""
    with TraceWriter(path, trace.header) as writer:
        for event in trace.events:
            writer.write(event)
