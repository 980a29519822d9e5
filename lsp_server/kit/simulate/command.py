"""``scopecache simulate``: its arguments, the run they ask for, and its output.

Without ``--timed`` the policies and key designs are compared on the trace
(``simulate``); with it, the client designs in trace time
(``timed``). Either way the result is a table, ``--json`` (the
objects DESIGN.md fixes) or a ``--plot`` (``report``). A trace a server
recorded with its suggestions also reports what the developer accepted and
kept in that session (``acceptance``, as ``scopecache/stats`` showed it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from lsp_server.kit.acceptance import acceptance_rows, trace_acceptance
from lsp_server.kit.simulate import report
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.simulate.strategies import POLICY_STRATEGIES, STRATEGY_NAMES
from lsp_server.kit.simulate.timed import (
    CLIENT_MODELS,
    DEFAULT_TOKEN_MS,
    DESIGN_NAMES,
    PLOT_TTFTS,
    collect_timed,
    simulate_timed,
)
from lsp_server.kit.simulate.untimed import (
    DEFAULT_POLICIES,
    default_capacities,
    identical_policies,
    simulate,
    working_set,
)
from lsp_server.observe.trace.format import TraceError
from transport.cost import LOCAL_SERVER, REMOTE_SERVICE


def names(raw: str, known: Sequence[str], what: str) -> list[str]:
    """The comma-separated names in ``raw`` (``all``: every known one); ValueError if unknown."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if names == ["all"]:
        return list(known)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown {what} {', '.join(unknown) or '(none)'}; known: {', '.join(known)}"
        )
    return names


def run(args: argparse.Namespace) -> int:
    """Entry point of ``scopecache simulate``."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    if args.timed:
        return run_timed(args)
    try:
        strategies = names(args.strategies, STRATEGY_NAMES, "strategy")
        policies = names(args.policies, (*DEFAULT_POLICIES, "none"), "policy")
        capacities = [int(c) for c in (args.capacities or "").split(",") if c.strip()]
        if args.capacities and (not capacities or min(capacities) < 1):
            raise ValueError("--capacities needs positive integers")
    except ValueError as exc:
        err.print(f"scopecache simulate: {exc}")
        return 2
    with Progress(console=err, transient=True) as progress:
        reading = progress.add_task("reading trace", total=None)
        try:
            requests = collect_requests(args.trace, on_event=lambda: progress.advance(reading))
        except (OSError, TraceError) as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
        progress.update(reading, visible=False)
        if not capacities:
            capacities = default_capacities(requests)
        per = len(policies) * len(capacities)
        total = sum(per if s in POLICY_STRATEGIES else 1 for s in strategies)
        task = progress.add_task("simulating", total=total)
        results = simulate(
            requests,
            strategies=strategies,
            policies=policies,
            capacities=capacities,
            on_run=lambda: progress.advance(task),
        )
    if identical_policies(results, policies):
        stored = working_set(requests)
        err.print(
            "all policies identical at these capacities: the working set fits "
            f"(an unbounded cache keeps {stored} answers, and a session that rarely "
            "returns to earlier code reuses only the latest ones); try smaller "
            "--capacities or a trace with revisits (trace synth --nonlinear 0.3)"
        )
    if args.plot:
        try:
            report.plot(results, capacities, policies, args.plot)
        except report.PlotUnavailable as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
    acceptance = trace_acceptance(args.trace)
    if args.json:
        data = report.report_json(results, capacities, policies)
        if acceptance["shown"]:
            data["acceptance"] = acceptance
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        out = Console()
        report.render_table(results, out)
        _print_acceptance(out, acceptance)
        if args.plot:
            out.print(f"plot written to {args.plot}")
    return 0


def _print_acceptance(out: Any, acceptance: dict[str, Any]) -> None:
    """The recorded session's acceptance, one line per measure (nothing when none was shown)."""
    for measure, value in acceptance_rows(acceptance):
        out.print(f"recorded {measure}: {value}")


#: ``--service``: the cost model the timed designs are played against (``transport.cost``)
SERVICE_COSTS = {"local": LOCAL_SERVER, "remote": REMOTE_SERVICE}


def run_timed(args: argparse.Namespace) -> int:
    """``scopecache simulate --timed``: table, ``--json`` and ``--plot``."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True)
    try:
        raw = getattr(args, "designs", None) or ",".join(DESIGN_NAMES)
        designs = names(raw, tuple(CLIENT_MODELS), "design")
    except ValueError as exc:
        err.print(f"scopecache simulate: {exc}")
        return 2
    token_ms = float(getattr(args, "token_ms", DEFAULT_TOKEN_MS))
    # the service's cost model: "local" (llama.cpp, Ollama) or "remote" (the default)
    service = getattr(args, "service", None) or "remote"
    if service not in SERVICE_COSTS:
        err.print(f"scopecache simulate: unknown service {service!r} (local or remote)")
        return 2
    ttfts = sorted({float(args.ttft_ms), *(PLOT_TTFTS if args.plot else ())})
    with Progress(console=err, transient=True) as progress:
        reading = progress.add_task("reading trace", total=None)
        try:
            trace = collect_timed(args.trace, on_event=lambda: progress.advance(reading))
        except (OSError, TraceError) as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
        progress.update(reading, visible=False)
        task = progress.add_task("simulating", total=len(designs) * len(ttfts))
        results = simulate_timed(
            trace, designs, ttfts, token_ms=token_ms, on_run=lambda: progress.advance(task),
            cost=SERVICE_COSTS[service],
        )  # fmt: skip
    main = [r for r in results if r.ttft_ms == float(args.ttft_ms)]
    if args.plot:
        try:
            report.plot_timed(results, args.plot)
        except report.PlotUnavailable as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
    acceptance = trace_acceptance(args.trace)
    if args.json:
        data = report.timed_json(main, token_ms=token_ms)
        if acceptance["shown"]:
            data["acceptance"] = acceptance
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        out = Console()
        if out.width < report.TIMED_TABLE_WIDTH:
            out = Console(width=report.TIMED_TABLE_WIDTH)  # cut figures help nobody
        report.render_timed_table(main, out, token_ms=token_ms)
        _print_acceptance(out, acceptance)
        if args.plot:
            out.print(f"plot written to {args.plot}")
    return 0
