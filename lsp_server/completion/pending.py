"""``Pending``: an answer that needs waiting, carried as the rest of its work.

A cache hit is answered from memory with no wait, so the functions on a
request's way (``CompletionPipeline.complete_now``, the server's
``suggest_now``, the inline handler) return the answer itself when they
have it and a ``Pending`` otherwise. The caller awaits ``rest`` exactly once:
the server runs it as the request's task, where cancellation reaches it.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pending(Generic[T]):
    """The rest of an answer's work, not started yet; await ``rest`` once."""

    rest: Coroutine[Any, Any, T]
