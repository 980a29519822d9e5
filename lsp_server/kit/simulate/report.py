"""How ``scopecache simulate`` shows its results: JSON, a rich table, a plot.

``report_json`` produces DESIGN.md's shape for the ``scope`` design
(``{"capacities": [...], "policies": {NAME: {"hitRatio": [...],
"upstreamRequests": [...]}}}``, one element per capacity) plus a
``strategies`` object with every design's figures. In ``--timed`` mode,
``timed_json`` adds a top-level ``"timed": {design: {...}}`` object and
``plot_timed`` draws instant share against time to first token.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from lsp_server.kit.simulate.timed.model import TimedResult
    from lsp_server.kit.simulate.untimed import DesignResult

logger = logging.getLogger(__name__)

PLOT_EXTRA_MESSAGE = (
    "--plot needs matplotlib, which is an optional extra: pip install 'scopecache[plot]'"
)


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def report_json(
    results: Sequence[DesignResult], capacities: Sequence[int], policies: Sequence[str]
) -> dict[str, Any]:
    """The ``--json`` object."""
    by_run = {(r.strategy, r.policy, r.capacity): r for r in results}
    table: dict[str, dict[str, list[Any]]] = {}
    for policy in policies:
        runs = [by_run.get(("scope", policy, c)) for c in capacities]
        if all(r is not None for r in runs):
            table[policy] = {
                "hitRatio": [round(r.hit_ratio, 6) for r in runs if r is not None],
                "upstreamRequests": [r.upstream for r in runs if r is not None],
            }
    strategies: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        strategies.setdefault(r.strategy, []).append(r.to_json())
    requests = results[0].requests if results else 0
    return {
        "capacities": list(capacities),
        "policies": table,
        "strategies": strategies,
        "requests": requests,
    }


def render_table(results: Sequence[DesignResult], console: Console) -> None:
    """One row per design run."""
    table = Table(title="scopecache simulate", show_lines=False, caption=STALE_LEGEND)
    for name, justify in (
        ("design", "left"),
        ("policy", "left"),
        ("capacity", "right"),
        ("hit ratio", "right"),
        ("upstream", "right"),
        ("useful", "right"),
        ("stale", "right"),
    ):
        # design names are the words a reader looks up: never cut them off
        table.add_column(name, justify=justify, no_wrap=name == "design")  # type: ignore[arg-type]
    for r in results:
        table.add_row(
            r.strategy,
            r.policy or "-",
            str(r.capacity) if r.capacity is not None else "-",
            f"{100 * r.hit_ratio:.1f}%",
            str(r.upstream),
            f"{100 * r.useful_ratio:.1f}%",
            str(r.stale),
        )
    console.print(table)
    if results:
        console.print(f"{results[0].requests} completion requests")


@dataclass(frozen=True)
class Series:
    """One line of the hit-ratio plot."""

    label: str
    #: hit ratios in percent, one per capacity; a single value is drawn as a level
    ratios: tuple[float, ...]
    #: ``policy`` (a policy on a design with capacities), ``ceiling`` (opt), ``level``
    kind: str


def plot_series(
    results: Sequence[DesignResult], capacities: Sequence[int], policies: Sequence[str]
) -> list[Series]:
    """The lines ``plot`` draws: every design that ran, each policy of those that have them.

    A line equal to one already listed says so in its label (``lfu (= lru)``):
    drawn on top of each other, the hidden one would otherwise look missing.
    """
    by_run = {(r.strategy, r.policy, r.capacity): r for r in results}
    strategies = list(dict.fromkeys(r.strategy for r in results))
    series: list[Series] = []
    for strategy in strategies:
        prefix = "" if strategy == "scope" else f"{strategy} "
        if any(r.strategy == strategy and r.capacity is not None for r in results):
            for policy in policies:
                runs = [by_run.get((strategy, policy, c)) for c in capacities]
                if any(r is None for r in runs):
                    continue
                ratios = tuple(100 * r.hit_ratio for r in runs if r is not None)
                kind = "ceiling" if policy == "opt" else "policy"
                label = f"{prefix}{policy}" + (" (ceiling)" if policy == "opt" else "")
                same = next((o.label for o in series if o.ratios == ratios), None)
                series.append(Series(f"{label} (= {same})" if same else label, ratios, kind))
        else:
            run = by_run.get((strategy, None, None))
            if run is not None:
                series.append(Series(f"{strategy} (no capacity)", (100 * run.hit_ratio,), "level"))
    return series


def plot(
    results: Sequence[DesignResult], capacities: Sequence[int], policies: Sequence[str], path: str
) -> None:
    """Hit ratio against capacity: one line per design and policy, OPT as the ceiling."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable(PLOT_EXTRA_MESSAGE) from exc
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = "osD^v<>ph*"
    for index, line in enumerate(plot_series(results, capacities, policies)):
        if line.kind == "level":
            ax.axhline(line.ratios[0], linestyle=":", color=f"C{index % 10}", label=line.label)
        elif line.kind == "ceiling":
            ax.plot(capacities, line.ratios, "k--", linewidth=2, label=line.label)
        else:
            # identical lines stay visible: thinner, dashed, a different marker
            hidden = "(= " in line.label
            ax.plot(
                capacities,
                line.ratios,
                marker=markers[index % len(markers)],
                linestyle="--" if hidden else "-",
                linewidth=1 if hidden else 1.8,
                label=line.label,
            )
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(capacities), [str(c) for c in capacities])
    ax.set_xlabel("capacity (entries)")
    ax.set_ylabel("hit ratio (%)")
    ax.set_title("hit ratio by key design, policy and capacity")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


#: columns of the timed table: instant (<= 10 ms), answered before the next key,
#: upstream started / completed / cancelled / speculative, wasted streams / chars
TIMED_COLUMNS = (
    "design", "instant", "<next", "up", "done", "cxl", "spec", "wasted", "w.chars",
    "stale", "p50 ms", "p95 ms",
)
#: printed under the timed table: what each short column counts
TIMED_LEGEND = (
    "instant: answered within 10 ms of the keystroke; <next: answered before the next "
    "keystroke; up / done / cxl / spec: upstream streams started / completed / cancelled "
    "/ speculative; wasted / w.chars: streams and characters generated for nobody "
    "(cancelled, or finished unseen); p50 / p95 ms: latency in milliseconds, 'never' "
    "when no answer came before the next keystroke"
)
#: printed under both tables: what a simulated stale serve is
STALE_LEGEND = (
    "stale: a served suggestion that still fits the line (the server's final check "
    "blocks only text that no longer fits the buffer) but is not what the model would "
    "answer there now, because text the key does not cover changed"
)
#: the width the timed table needs to show every figure whole
TIMED_TABLE_WIDTH = 120


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def _ms(value: float) -> str:
    return "never" if value == float("inf") else f"{value:.0f}"


def timed_json(results: Sequence[TimedResult], *, token_ms: float) -> dict[str, Any]:
    """The ``--timed --json`` object: ``{"timed": {design: {...}}, ...}``."""
    return {
        "timed": {r.design: r.to_json() for r in results},
        "ttftMs": results[0].ttft_ms if results else None,
        "tokenMs": token_ms,
        "requests": results[0].requests if results else 0,
    }


def render_timed_table(
    results: Sequence[TimedResult], console: Console, *, token_ms: float
) -> None:
    """One row per client design at one time to first token."""
    ttft = results[0].ttft_ms if results else 0.0
    table = Table(
        title=f"scopecache simulate --timed (TTFT {ttft:.0f} ms, {token_ms:g} ms/token)",
        caption=f"{TIMED_LEGEND}. {STALE_LEGEND}",
    )
    for name in TIMED_COLUMNS:
        table.add_column(name, justify="left" if name == "design" else "right", no_wrap=True)
    for r in results:
        table.add_row(
            r.design,
            _pct(r.share(r.instant)),
            _pct(r.share(r.answered)),
            str(r.started),
            str(r.completed),
            str(r.cancelled),
            str(r.speculative),
            str(r.wasted_streams),
            str(r.wasted_chars),
            str(r.stale),
            _ms(r.percentile(0.5)),
            _ms(r.percentile(0.95)),
        )
    console.print(table)
    if results:
        console.print(
            f"{results[0].requests} completion requests; latency counts requests never "
            "answered before the next keystroke as never"
        )


def plot_timed(results: Sequence[TimedResult], path: str) -> None:
    """Instant share against time to first token, one line per design."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable(PLOT_EXTRA_MESSAGE) from exc
    designs: dict[str, list[TimedResult]] = {}
    for r in results:
        designs.setdefault(r.design, []).append(r)
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    drawn: dict[tuple[tuple[float, float], ...], str] = {}
    markers = "osD^v<>ph*"
    for index, (design, runs) in enumerate(designs.items()):
        runs.sort(key=lambda r: r.ttft_ms)
        points = tuple((r.ttft_ms, 100 * r.share(r.instant)) for r in runs)
        under = drawn.setdefault(points, design)
        # a line exactly on top of another says so, dashed, so it does not look missing
        style = "k-" if design == "ours" else ("--" if under != design else "-")
        ax.plot(
            [x for x, _y in points],
            [y for _x, y in points],
            style,
            marker=markers[index % len(markers)],
            label=design if under == design else f"{design} (= {under})",
            clip_on=False,  # a line at 0% stays visible on the axis
            zorder=3,
        )
    ax.set_xlabel("time to first token (ms)")
    ax.set_ylabel("answered within 10 ms (%)")
    ax.set_title("instant share by client design")
    # Room below 0% and above 100%, and the legend outside the axes, so no line hides.
    ax.set_ylim(-4, 104)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
