"""Fault injection for the transport's tests, armed at run time.

``POST /__faults {"mode": M, "count": N, ...params}`` makes the next N
completion requests (``count: -1``: until ``DELETE /__faults``) misbehave in
mode M. ``"target": "token"`` aims the fault at ``/oauth/token`` instead.
Modes and their parameters:

=================  ===========================================================
``status``         answer ``status`` (default 500) with a JSON error body;
                   ``retryAfter`` seconds adds a ``Retry-After`` header
``malformed-json`` non-stream: a body that is not JSON; stream: a chunk
                   whose JSON is cut short, then the stream ends
``malformed-sse``  stream lines without ``data:`` and no ``[DONE]``
``never-ending``   a stream that sends a token every ``interval`` seconds
                   (default 0.05) until the client goes away
``slow-headers``   wait ``delay`` seconds (default 5) before answering normally
``reset``          abort the TCP connection before any response header (the
                   client sees a reset / remote-protocol error, never a 500)
``reset-mid-stream`` send ``chunks`` chunks (default 2), then close the
                   connection in the middle of the response
``huge``           a suggestion of ``size`` bytes (default 1 MB)
``invalid-utf8``   a chunk (or body) containing bytes that are not UTF-8
``flood``          ``size`` bytes (default 16 MB) of valid chunks, fast
``refuse-field``   a body carrying the field ``field`` gets ``status``
                   (default 400), as services that reject a parameter they
                   do not know; a body without it is answered as usual
=================  ===========================================================

Both resets end the whole TCP connection (other HTTP/2 streams on it break
too), which is what a crashed or restarted upstream looks like to a client.
``reset`` sends a TCP RST before any response byte (httpx raises
``RemoteProtocolError``, ``ReadError`` or, if it was still writing,
``WriteError``; it never sees a status); ``reset-mid-stream``
first lets the chunks already written reach the client, then closes (a RST
could overtake them), so the client sees a response that stops short.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

MODES = frozenset(
    {
        "status",
        "malformed-json",
        "malformed-sse",
        "never-ending",
        "slow-headers",
        "reset",
        "reset-mid-stream",
        "huge",
        "invalid-utf8",
        "flood",
        "refuse-field",
    }
)
TARGETS = frozenset({"completions", "token"})


class FaultError(ValueError):
    """A fault specification that cannot be armed."""


@dataclass(frozen=True)
class Fault:
    """One armed fault mode and its parameters."""

    mode: str
    params: dict[str, Any] = field(default_factory=dict)

    def number(self, name: str, default: float) -> float:
        """A numeric parameter, or ``default``."""
        value = self.params.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return default
        return float(value)


#: what a request gets when nothing is armed: answered normally
NO_FAULT = Fault("")


@dataclass
class _Armed:
    fault: Fault
    remaining: int  # -1: unlimited


class FaultPlan:
    """The faults waiting for the next requests, per target."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[_Armed]] = {t: deque() for t in TARGETS}

    def arm(self, spec: dict[str, Any]) -> Fault:
        """Arm a fault from its JSON specification; raises ``FaultError``."""
        mode = spec.get("mode")
        if mode not in MODES:
            raise FaultError(f"unknown fault mode {mode!r}; known: {sorted(MODES)}")
        count = spec.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count == 0 or count < -1:
            raise FaultError("count must be a positive integer or -1")
        target = spec.get("target", "completions")
        if target not in TARGETS:
            raise FaultError(f"target must be one of {sorted(TARGETS)}")
        params = {k: v for k, v in spec.items() if k not in ("mode", "count", "target")}
        fault = Fault(str(mode), params)
        self._queues[str(target)].append(_Armed(fault, count))
        return fault

    def clear(self) -> None:
        """Disarm every fault."""
        for queue in self._queues.values():
            queue.clear()

    def take(self, target: str = "completions") -> Fault | None:
        """The fault for the request arriving now, if any (consumes one use)."""
        queue = self._queues[target]
        if not queue:
            return None
        armed = queue[0]
        if armed.remaining > 0:
            armed.remaining -= 1
            if armed.remaining == 0:
                queue.popleft()
        return armed.fault

    def describe(self) -> list[dict[str, Any]]:
        """What is armed, for ``GET /__faults``."""
        return [
            {"target": target, "mode": a.fault.mode, "count": a.remaining, **a.fault.params}
            for target, queue in sorted(self._queues.items())
            for a in queue
        ]
