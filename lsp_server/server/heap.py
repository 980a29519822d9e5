"""The ``scopecache serve`` process's start-up objects, frozen out of the collector's passes.

After start-up the server process tracks about 90,000 objects that live
as long as it does: lsprotocol's types and the functions cattrs generated
for them, pygls, the HTTP stack, the grammars' bindings. Every full pass of
the cycle collector walks all of them. In a two-minute soak (``make soak``,
about 57,000 requests) there were 8 full passes of 62 to 75 ms each: a
keystroke that lands on one waits that long for its answer.

``settle_heap`` runs once, after the first-use rehearsals at
``initialized``: one full collection of what start-up left behind, then
``gc.freeze()``, which moves every object still alive into a generation no
pass walks. Objects freed by their reference count are still freed; only a
reference cycle among the frozen objects could no longer be reclaimed, and
start-up leaves none behind (the collection just before the freeze cleared
them). In the same soak there were then 12 full passes of at most 8 ms.

Only the serve command settles its heap (``ScopecacheServer.owns_process``):
a host that embeds the server keeps its process's collector as it was.
"""

from __future__ import annotations

import gc
import logging

logger = logging.getLogger(__name__)


def settle_heap() -> int:
    """Collect what start-up left behind, freeze the rest; the number of objects frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logger.debug("start-up heap settled: %d objects out of the collector's passes", frozen)
    return frozen
