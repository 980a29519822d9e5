"""The cycle collector's full passes, timed: the pauses a keystroke can land on.

CPython's cycle collector stops the process while it walks a generation.
The youngest generations are small (under 3 ms here, most well under 0.1
ms); a full pass (generation 2) walks every tracked object the process has.
``CollectorPauses`` times each full pass through ``gc.callbacks`` (a call
at each collection's start and end, well under a microsecond) and
``scopecache/stats`` reports them under ``gc``, with how many objects are
frozen out of the passes (``lsp_server.server.heap``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

#: the generation of a full pass
FULL = 2


class CollectorPauses:
    """Counts and times the cycle collector's full passes while installed."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.full_passes = 0
        self.total_s = 0.0
        self.longest_s = 0.0
        self.last_s = 0.0
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        """The ``gc.callbacks`` entry point."""
        if info.get("generation") != FULL:
            return
        if phase == "start":
            self._started = self.clock()
            return
        if self._started is None:
            return  # installed during a pass
        took, self._started = self.clock() - self._started, None
        self.full_passes += 1
        self.total_s += took
        self.last_s = took
        self.longest_s = max(self.longest_s, took)

    def install(self) -> None:
        """Start timing (idempotent)."""
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        """Stop timing (idempotent)."""
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    def snapshot(self) -> dict[str, Any]:
        """The ``gc`` object of ``scopecache/stats``."""
        return {
            "frozen": gc.get_freeze_count(),
            "fullPasses": self.full_passes,
            "fullPauseMs": {
                "last": round(self.last_s * 1000.0, 2),
                "max": round(self.longest_s * 1000.0, 2),
                "total": round(self.total_s * 1000.0, 1),
            },
        }
