"""``scopecache prewarm --from TRACE``: fill the shared L2 before people start work.

Replays a trace through a real server configured exactly like the team's
editors (``--config``: the same endpoint, model, namespace and L2), so every
answer the session asks for is fetched once and stored in L2. A team can run
it in CI on a recorded or synthesized session of the code base; the first
editor that opens afterwards is served from L2 (and prewarms its own L1 from
the hottest entries at start-up).

The answers must come from the service the editors use: with no endpoint
(``--endpoint`` or ``endpoint`` in ``--config``) it refuses, rather than
fill the team's cache with the reference service's corpus answers that
editors would then be served. ``--reference-service`` asks for exactly that,
explicitly (to try prewarm out on a scratch L2).

Exit codes: 0 the L2 was filled; 2 bad usage or input (no endpoint and no
``--reference-service``, both, an unreadable trace or config, ``cache.l2 =
"none"``, the reference service did not start).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.upstream_process import UpstreamStartError
from lsp_server.observe.trace.reader import read_trace
from lsp_server.server.settings_codec import SettingsFileError, load_toml

#: exit codes of ``scopecache prewarm``
EXIT_OK = 0
EXIT_USAGE = 2

NO_ENDPOINT = (
    "no completion service given: prewarm fills the cache your editors read, so it asks "
    "the service they use; give --endpoint URL or endpoint in the --config file "
    "(--reference-service fills it with the reference service's corpus answers instead, "
    "to try prewarm out on a scratch L2)"
)
BOTH_SERVICES = (
    "--reference-service starts a service of its own: leave out --endpoint and the "
    "config file's endpoint, or leave out --reference-service"
)


def _refuse(console: Console, message: str) -> int:
    console.print(f"[red]scopecache prewarm:[/red] {escape(message)}")
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    """Replay the trace with L2 on; print how many answers were stored."""
    console = Console(stderr=True)
    try:
        trace = read_trace(args.trace)
        settings: dict[str, Any] = dict(load_toml(args.config)) if args.config else {}
    except (OSError, ValueError, SettingsFileError) as exc:
        return _refuse(console, str(exc))
    has_endpoint = bool(args.endpoint or settings.get("endpoint"))
    if not has_endpoint and not args.reference_service:
        return _refuse(console, NO_ENDPOINT)
    if has_endpoint and args.reference_service:
        return _refuse(console, BOTH_SERVICES)
    cache = dict(settings.get("cache", {}))
    if cache.get("l2", "sqlite") == "none":
        return _refuse(console, "cache.l2 is none: nothing to fill")
    settings["cache"] = cache
    # Prefetch belongs to an editing session, not to a batch fill.
    settings["speculative"] = {**dict(settings.get("speculative", {})), "enabled": False}
    try:
        result = asyncio.run(
            replay_trace(
                trace,
                endpoint=args.endpoint,
                settings=settings,
                console=None if args.json else console,
            )
        )
    except UpstreamStartError as exc:
        return _refuse(console, str(exc))
    l2 = result.server_stats.get("l2", {})
    report = {
        "requests": len(result.outcomes),
        "upstreamRequests": result.server_stats.get("upstreamRequests", 0),
        "l2": l2,
    }
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        Console().print(
            f"prewarmed {l2.get('kind', 'L2')}: {report['upstreamRequests']} answers fetched "
            f"for {report['requests']} requests; L2 now holds {l2.get('size', '?')} entries"
        )
    return EXIT_OK
