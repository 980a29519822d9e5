"""The ``scopecache diagnose`` report: measurements, health limits, verdicts, rendering.

A ``Measurement`` is one line of the report: a name, a value with its unit,
the threshold it was judged against, a verdict and, for every verdict that
is not ``ok``, a one-line hint saying what it means and what to do. Verdicts:

- ``ok``: within the health threshold (or informational);
- ``slow``: works, but costs the user time; the hint says where it goes;
- ``failing``: does not work (the hint names the setting or the cause);
- ``skipped``: could not be measured (not offered by the service, or an
  earlier layer failed); ignored by the overall verdict.

A ``Report`` groups measurements by layer (``network``, ``encoding``,
``service``, ``client``). Its verdict is the worst one among them, and
``failing`` when nothing at all could be measured.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

logger = logging.getLogger(__name__)

Verdict = Literal["ok", "slow", "failing", "skipped"]
Value = float | int | str | None

LAYERS: tuple[str, ...] = ("network", "encoding", "service", "client")
_SEVERITY: dict[str, int] = {"skipped": -1, "ok": 0, "slow": 1, "failing": 2}
_STYLE: dict[str, str] = {"ok": "green", "slow": "yellow", "failing": "bold red", "skipped": "dim"}


@dataclass(frozen=True)
class Limit:
    """A health threshold: ``ok`` on the good side of ``ok``, ``failing`` past ``failing``."""

    ok: float
    unit: str = "ms"
    failing: float | None = None
    higher_is_better: bool = False

    def judge(self, value: float) -> Verdict:
        """The verdict for ``value``."""
        if self.higher_is_better:
            if self.failing is not None and value <= self.failing:
                return "failing"
            return "ok" if value >= self.ok else "slow"
        if self.failing is not None and value >= self.failing:
            return "failing"
        return "ok" if value < self.ok else "slow"

    def describe(self) -> str:
        """``"< 150 ms"`` or ``">= 30 tok/s"``."""
        sign = ">=" if self.higher_is_better else "<"
        unit = self.unit if self.unit in ("x", "%") else f" {self.unit}"
        return f"{sign} {_number(self.ok)}{unit}".rstrip()


@dataclass(frozen=True)
class Measurement:
    """One line of the report."""

    name: str
    value: Value
    unit: str = ""
    threshold: str | None = None
    verdict: Verdict = "ok"
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` item: name, value, unit, threshold, verdict, hint."""
        value = round(self.value, 3) if isinstance(self.value, float) else self.value
        return {
            "name": self.name,
            "value": value,
            "unit": self.unit,
            "threshold": self.threshold,
            "verdict": self.verdict,
            "hint": self.hint,
        }


def judged(name: str, value: float, limit: Limit, hint: str) -> Measurement:
    """A measured number judged against ``limit``; ``hint`` is kept only when not ok."""
    verdict = limit.judge(value)
    return Measurement(
        name, value, limit.unit, limit.describe(), verdict, None if verdict == "ok" else hint
    )


def info(name: str, value: Value, unit: str = "", hint: str | None = None) -> Measurement:
    """An informational measurement without a threshold."""
    return Measurement(name, value, unit, None, "ok", hint)


def failing(name: str, hint: str, value: Value = None, unit: str = "") -> Measurement:
    """A measurement that could not succeed, with the reason and the fix."""
    return Measurement(name, value, unit, None, "failing", hint)


def skipped(name: str, why: str) -> Measurement:
    """A measurement that was not made, and why."""
    return Measurement(name, None, "", None, "skipped", why)


def worst(verdicts: list[Verdict]) -> Verdict:
    """The most severe verdict, ignoring ``skipped``; ``skipped`` when there is none."""
    judged_ = [v for v in verdicts if v != "skipped"]
    if not judged_:
        return "skipped"
    return max(judged_, key=lambda v: _SEVERITY[v])


@dataclass
class Report:
    """Every measurement of one ``diagnose`` run, by layer."""

    endpoint: str | None
    provider: str = ""
    layers: dict[str, list[Measurement]] = field(
        default_factory=lambda: {layer: [] for layer in LAYERS}
    )
    #: settings-file problems (the rest of the settings still applied)
    problems: list[str] = field(default_factory=list)

    def add(self, layer: str, *measurements: Measurement) -> None:
        """Append measurements to ``layer``."""
        self.layers[layer].extend(measurements)

    def skip_rest(self, layers: tuple[str, ...], why: str) -> None:
        """Mark ``layers`` that have no measurement yet as not measured."""
        for layer in layers:
            if not self.layers[layer]:
                self.add(layer, skipped(layer, why))

    def layer_verdict(self, layer: str) -> Verdict:
        """The worst verdict in one layer."""
        return worst([m.verdict for m in self.layers[layer]])

    @property
    def verdict(self) -> Verdict:
        """The worst verdict overall; ``failing`` if nothing could be measured."""
        overall = worst([m.verdict for ms in self.layers.values() for m in ms])
        return "failing" if overall == "skipped" else overall

    def to_json(self) -> dict[str, Any]:
        """``{"layers": {...}, "endpoint": ..., "verdict": ...}``."""
        return {
            "endpoint": self.endpoint,
            "provider": self.provider,
            "verdict": self.verdict,
            "layers": {layer: [m.to_json() for m in ms] for layer, ms in self.layers.items()},
            "problems": list(self.problems),
        }


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}".rstrip("0").rstrip(".")


def format_value(measurement: Measurement) -> str:
    """The value and its unit as shown in the table."""
    value = measurement.value
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    unit = measurement.unit
    if unit in ("x", "%"):
        return f"{_number(value)}{unit}"
    return f"{_number(value)} {unit}".rstrip()


def render_table(report: Report, console: Console) -> None:
    """Print the report as a rich table, one section per layer, then the verdict."""
    table = Table(title=f"scopecache diagnose: {report.endpoint or '(no endpoint)'}")
    table.add_column("layer", style="bold")
    table.add_column("measurement")
    table.add_column("value", justify="right")
    table.add_column("threshold", justify="right", style="dim")
    table.add_column("verdict")
    table.add_column("hint", overflow="fold", ratio=1)
    for layer, measurements in report.layers.items():
        for index, m in enumerate(measurements):
            table.add_row(
                layer if index == 0 else "",
                m.name,
                format_value(m),
                m.threshold or "",
                Text(m.verdict, style=_STYLE[m.verdict]),
                m.hint or "",
                end_section=index == len(measurements) - 1,
            )
    # Settings problems first: a measurement below may be off because of one.
    for problem in report.problems:
        console.print(f"[yellow]settings:[/] {problem}")
    console.print(table)
    verdict = report.verdict
    console.print(Text(f"verdict: {verdict}", style=_STYLE[verdict]))
