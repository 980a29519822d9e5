"""Which llama.cpp slot a request goes to (``id_slot``), when the server has several.

A llama.cpp server with ``--parallel N`` keeps one KV cache per slot and, by
default, puts a request on the idle slot whose cached prompt shares the most
with it. A speculative prefetch shares most of its prompt with the document's
last request, so it tends to land on that request's slot and replace its KV
cache with the predicted state, and the user's next keystroke pays a prefill.

With ``completion.slotPinning`` on and a server that reports more than one
slot (``/props`` ``total_slots``), ``SlotPlan`` keeps each document on one
slot of its own and sends speculative prefetches to the last slot, which no
document's main requests use: documents get slots ``0 .. N-2`` round-robin
in the order they are first seen, prefetches slot ``N-1``. A document keeps
its slot until ``MAX_DOCUMENTS`` others have been seen since it was last
used.
"""

from __future__ import annotations

from collections import OrderedDict

#: documents remembered; the least recently used one is forgotten first
MAX_DOCUMENTS = 256


class SlotPlan:
    """Stable slot ids for one server with ``slots`` slots."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._assigned: OrderedDict[str, int] = OrderedDict()
        self._next = 0

    @property
    def active(self) -> bool:
        """Whether there is anything to choose: two slots or more."""
        return self.slots > 1

    @property
    def speculative_slot(self) -> int:
        """The slot speculative prefetches go to (the last one)."""
        return self.slots - 1

    def slot_for(self, document: str, *, speculative: bool = False) -> int | None:
        """The ``id_slot`` of a request for ``document``; None leaves it to the server."""
        if not self.active or not document:
            return None
        if speculative:
            return self.speculative_slot
        slot = self._assigned.get(document)
        if slot is not None:
            self._assigned.move_to_end(document)
            return slot
        slot = self._next
        self._next = (self._next + 1) % (self.slots - 1)
        self._assigned[document] = slot
        if len(self._assigned) > MAX_DOCUMENTS:
            self._assigned.popitem(last=False)
        return slot
