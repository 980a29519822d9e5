"""How ``scopecache simulate`` shows its results: JSON, a rich table, a plot.

``report_json`` produces DESIGN.md's shape for the ``scope`` design
(``{"capacities": [...], "policies": {NAME: {"hitRatio": [...],
"upstreamRequests": [...]}}}``, one element per capacity) plus a
``strategies`` object with every design's figures.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from lsp_server.simulate import DesignResult

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
    table = Table(title="scopecache simulate", show_lines=False)
    for name, justify in (
        ("design", "left"),
        ("policy", "left"),
        ("capacity", "right"),
        ("hit ratio", "right"),
        ("upstream", "right"),
        ("useful", "right"),
        ("stale", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
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


def plot(
    results: Sequence[DesignResult], capacities: Sequence[int], policies: Sequence[str], path: str
) -> None:
    """Hit ratio against capacity, one line per policy, OPT drawn as the ceiling."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable(PLOT_EXTRA_MESSAGE) from exc
    by_run = {(r.strategy, r.policy, r.capacity): r for r in results}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for policy in policies:
        ys = [by_run.get(("scope", policy, c)) for c in capacities]
        if any(y is None for y in ys):
            continue
        ratios = [100 * y.hit_ratio for y in ys if y is not None]
        if policy == "opt":
            ax.plot(capacities, ratios, "k--", linewidth=2, label="opt (ceiling)")
        else:
            ax.plot(capacities, ratios, marker="o", label=policy)
    for r in results:
        if r.strategy == "ideal":
            ax.axhline(100 * r.hit_ratio, color="grey", linestyle=":", label="ideal (unbounded)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("capacity (entries)")
    ax.set_ylabel("hit ratio (%)")
    ax.set_title("scope keys: hit ratio by policy and capacity")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
