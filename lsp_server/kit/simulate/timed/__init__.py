"""``scopecache simulate --timed``: client designs compared in trace time.

Where the untimed comparison (``lsp_server.kit.simulate.untimed``) counts
hits, this one plays each client design (ours, Cody's, Continue's, ...)
over a trace's requests with a latency model, so debounce, throttling,
streams the user types through and speculative prefetch count too:

* ``comparison``: the trace read with what time needs (``collect_timed``),
  a design's cache, and the runs per design and time to first token
  (``run_design``, ``simulate_timed``);
* ``model``: the latency model, the client designs' rules, a stream and a
  design's result;
* ``run``: ``TimedRun``, the deterministic event loop that plays one design;
* ``speculation``: the rules of ``ours``' speculative prefetch.

What it may import: the rest of ``lsp_server.kit.simulate`` below the
command (the requests, key designs and post-accept targets it builds on),
the parts of ``lsp_server`` under ``kit`` (``completion``'s throttle and
in-flight grace, ``documents``, ``observe``'s trace reader, the settings)
and ``cache``. The command (``lsp_server.kit.simulate.command``) and the
report import it, never the other way round.
"""

from __future__ import annotations

from lsp_server.kit.simulate.timed.comparison import (
    CHARS_PER_TOKEN,
    DEFAULT_TOKEN_MS,
    PLOT_TTFTS,
    TimedTrace,
    collect_timed,
    run_design,
    simulate_timed,
)
from lsp_server.kit.simulate.timed.model import (
    CLIENT_MODELS,
    DESIGN_NAMES,
    ClientModel,
    LatencyModel,
    TimedResult,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "CLIENT_MODELS",
    "DEFAULT_TOKEN_MS",
    "DESIGN_NAMES",
    "PLOT_TTFTS",
    "ClientModel",
    "LatencyModel",
    "TimedResult",
    "TimedTrace",
    "collect_timed",
    "run_design",
    "simulate_timed",
]
