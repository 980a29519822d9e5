"""``scopecache prewarm --from TRACE``: fill the shared L2 before people start work.

Replays a trace through a real server configured exactly like the team's
editors (``--config``: the same endpoint, model, namespace and L2), so every
answer the session asks for is fetched once and stored in L2. A team can run
it in CI on a recorded or synthesized session of the code base; the first
editor that opens afterwards is served from L2 (and prewarms its own L1 from
the hottest entries at start-up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from rich.console import Console

from lsp_server.kit.replay import replay_trace
from lsp_server.observe.trace.reader import read_trace
from lsp_server.server.settings_codec import SettingsFileError, load_toml


def run(args: argparse.Namespace) -> int:
    """Replay the trace with L2 on; print how many answers were stored."""
    console = Console(stderr=True)
    try:
        trace = read_trace(args.trace)
        settings: dict[str, Any] = dict(load_toml(args.config)) if args.config else {}
    except (OSError, ValueError, SettingsFileError) as exc:
        console.print(f"[red]scopecache prewarm:[/red] {exc}")
        return 2
    cache = dict(settings.get("cache", {}))
    if cache.get("l2", "sqlite") == "none":
        console.print("[red]scopecache prewarm:[/red] cache.l2 is none: nothing to fill")
        return 2
    settings["cache"] = cache
    # Prefetch belongs to an editing session, not to a batch fill.
    settings["speculative"] = {**dict(settings.get("speculative", {})), "enabled": False}
    result = asyncio.run(
        replay_trace(
            trace,
            endpoint=args.endpoint,
            settings=settings,
            console=None if args.json else console,
        )
    )
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
    return 0
