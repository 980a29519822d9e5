"""One benchmark row: a measure, its baseline in the same run, their ratio.

Every suite builds its rows here so that the table reads one way: values,
baselines and ratios keep three significant digits (never fewer than the
integer part holds: 12,346 stays whole, 0.01234 becomes 0.0123), integers
stay integers, and a ratio that cannot be taken (a zero, missing or
infinite baseline or value) is ``None``, printed as ``-`` in the table and
``null`` in ``--json``. A suite that measures its ratio some other way (the
median of per-round ratios) passes it as ``ratio``.
"""

from __future__ import annotations

import math
from typing import Any

#: significant digits kept in a row's figures
SIGNIFICANT = 3


def significant(value: float | int | None) -> float | int | None:
    """``value`` with ``SIGNIFICANT`` digits, whole numbers kept whole; ``None`` if not finite."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    digits = math.floor(math.log10(abs(value))) + 1
    return round(value, max(0, SIGNIFICANT - digits))


def ratio_of(value: float | int | None, baseline: float | int | None) -> float | None:
    """``value / baseline``; ``None`` if either is missing or not finite, or the baseline is 0."""
    if value is None or baseline is None:
        return None
    if not (math.isfinite(value) and math.isfinite(baseline)) or baseline == 0:
        return None
    return value / baseline


def row(
    name: str,
    value: float | int | None,
    baseline: float | int | None,
    unit: str,
    *,
    ratio: float | None = None,
) -> dict[str, Any]:
    """A table row; ``ratio`` defaults to ``value / baseline``."""
    taken = ratio_of(value, baseline) if ratio is None else ratio
    return {
        "name": name,
        "value": significant(value),
        "baseline": significant(baseline),
        "ratio": significant(taken),
        "unit": unit,
    }
