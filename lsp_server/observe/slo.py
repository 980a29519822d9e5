"""``scopecache slo check``: gate a run on service-level objectives.

Objectives are written in a small TOML file::

    [[objective]]
    name = "hit ratio"
    metric = "hitRatio"        # a derived name (below) or a dotted path in the JSON
    op = ">="                  # >=, >, <=, <, ==
    value = 0.5
    slack = 0.0                # absolute slack for --baseline comparisons (optional)
    optional = false           # a metric missing from the source is a breach unless optional

The source is a ``scopecache/stats`` JSON file, a ``replay --json`` file or
the URL of a running server's ``/stats.json``. Both JSON shapes are read
through ``metric_values``, which derives the common names: ``hitRatio``,
``usefulRatio``, ``upstreamRequestRatio``, ``upstreamErrorRatio``,
``hitLatencyP50Ms``/``P95``/``P99``, ``missLatencyP95Ms``, ``latencyP95Ms``.

With ``--baseline PREV.json --tolerance 0.1`` each objective is also
compared with the previous run: a value worse than the baseline by more than
10 % (and more than the objective's ``slack``) is a regression. A breach or a
regression exits 1; unreadable input exits 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import operator
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

logger = logging.getLogger(__name__)

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


class SloError(ValueError):
    """The SLO file or the source cannot be used."""


@dataclass(frozen=True, kw_only=True)
class Objective:
    """One objective: ``metric op value``."""

    name: str
    metric: str
    op: str
    value: float
    slack: float = 0.0
    optional: bool = False

    @property
    def higher_is_better(self) -> bool:
        """Whether a larger value is an improvement (for baseline comparisons)."""
        return self.op in (">=", ">")


@dataclass(frozen=True)
class Verdict:
    """The outcome of one objective."""

    objective: Objective
    actual: float | None
    baseline: float | None
    status: str  # ok, BREACH, REGRESSION, MISSING, skipped

    @property
    def failed(self) -> bool:
        """Whether this verdict fails the check."""
        return self.status in ("BREACH", "REGRESSION", "MISSING")


def load_objectives(path: str | Path) -> list[Objective]:
    """The objectives of an SLO file; raises ``SloError``."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SloError(f"cannot read SLO file {path}: {exc}") from exc
    raw = data.get("objective")
    if not isinstance(raw, list) or not raw:
        raise SloError(f"{path}: no [[objective]] tables")
    objectives = []
    for index, item in enumerate(raw, 1):
        try:
            objective = Objective(
                name=str(item.get("name", item["metric"])),
                metric=str(item["metric"]),
                op=str(item["op"]),
                value=float(item["value"]),
                slack=float(item.get("slack", 0.0)),
                optional=bool(item.get("optional", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SloError(f"{path}: objective {index} needs metric, op and value") from exc
        if objective.op not in OPS:
            raise SloError(f"{path}: objective {index}: op must be one of {', '.join(OPS)}")
        objectives.append(objective)
    return objectives


def load_source(source: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """A stats or replay JSON object from a file or an ``http(s)://`` URL."""
    try:
        if source.startswith(("http://", "https://")):
            import httpx

            response = httpx.get(source, timeout=timeout)
            response.raise_for_status()
            data = response.json()
        else:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
    except Exception as exc:
        raise SloError(f"cannot read {source}: {exc}") from exc
    if not isinstance(data, dict):
        raise SloError(f"{source}: not a JSON object")
    return data


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _path(data: Mapping[str, Any], dotted: str) -> float | None:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return _number(node)


def metric_values(data: Mapping[str, Any]) -> dict[str, float]:
    """The derived metric names, from a stats or a replay JSON object."""
    out: dict[str, float] = {}
    served = data.get("served", {})
    requests = _number(data.get("requests")) or 0.0
    total = sum(v for v in served.values() if isinstance(v, int | float))
    hits = total - float(served.get("upstream", 0))
    if requests:
        out["hitRatio"] = round(hits / requests, 4)
        out["upstreamRequestRatio"] = round(
            float(data.get("upstreamRequests", 0)) / requests, 4
        )
    if "useful" in data and total:
        out["usefulRatio"] = round(float(data["useful"]) / total, 4)
    upstream = _number(data.get("upstreamRequests"))
    errors = _number(data.get("upstreamErrors"))
    if errors is not None:
        out["upstreamErrorRatio"] = round(errors / upstream, 4) if upstream else 0.0
    latency = data.get("latencyMs", {})
    for q in ("p50", "p95", "p99"):
        hit = _path(latency, f"hit.{q}")
        if hit is not None:
            out[f"hitLatency{q.upper()}Ms"] = hit
        miss = _path(latency, f"miss.{q}")
        if miss is not None:
            out[f"missLatency{q.upper()}Ms"] = miss
        every = _path(latency, f"all.{q}") if "all" in latency else _path(latency, q)
        if every is not None:
            out[f"latency{q.upper()}Ms"] = every
    return out


def lookup(data: Mapping[str, Any], metric: str) -> float | None:
    """A metric by derived name, else by dotted path; None when absent."""
    derived = metric_values(data)
    return derived[metric] if metric in derived else _path(data, metric)


def evaluate(
    objectives: list[Objective],
    data: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    tolerance: float = 0.1,
) -> list[Verdict]:
    """One verdict per objective."""
    verdicts = []
    for objective in objectives:
        actual = lookup(data, objective.metric)
        before = lookup(baseline, objective.metric) if baseline is not None else None
        if actual is None:
            status = "skipped" if objective.optional else "MISSING"
        elif not OPS[objective.op](actual, objective.value):
            status = "BREACH"
        elif before is not None and _regressed(objective, actual, before, tolerance):
            status = "REGRESSION"
        else:
            status = "ok"
        verdicts.append(Verdict(objective, actual, before, status))
    return verdicts


def _regressed(objective: Objective, actual: float, before: float, tolerance: float) -> bool:
    margin = max(abs(before) * tolerance, objective.slack)
    if objective.higher_is_better:
        return actual < before - margin
    return actual > before + margin


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def verdict_table(verdicts: list[Verdict], title: str) -> Table:
    """A rich table: objective, threshold, actual, baseline, status."""
    table = Table(title=title)
    for column in ("objective", "metric", "threshold", "actual", "baseline", "status"):
        table.add_column(column, justify="right" if column in ("actual", "baseline") else "left")
    for v in verdicts:
        colour = "red" if v.failed else ("yellow" if v.status == "skipped" else "green")
        table.add_row(
            v.objective.name,
            v.objective.metric,
            f"{v.objective.op} {v.objective.value:g}",
            _fmt(v.actual),
            _fmt(v.baseline),
            f"[{colour}]{v.status}[/{colour}]",
        )
    return table


def run(args: argparse.Namespace) -> int:
    """``scopecache slo check``."""
    console = Console()
    try:
        objectives = load_objectives(args.slo)
        data = load_source(args.source)
        baseline = load_source(args.baseline) if args.baseline else None
    except SloError as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        return 2
    verdicts = evaluate(objectives, data, baseline=baseline, tolerance=args.tolerance)
    console.print(verdict_table(verdicts, f"SLO check: {args.source}"))
    failed = [v for v in verdicts if v.failed]
    if failed:
        console.print(f"[red]{len(failed)} of {len(verdicts)} objectives failed[/red]")
        return 1
    console.print(f"[green]all {len(verdicts)} objectives met[/green]")
    return 0
