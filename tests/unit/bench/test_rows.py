"""Benchmark rows: one rounding rule, a ratio that cannot be taken shown one way."""

from __future__ import annotations

import json
import math

from tests.bench.__main__ import table
from tests.bench.rows import row, significant


def test_three_significant_digits_whole_numbers_kept_whole() -> None:
    assert significant(0.012345) == 0.0123
    assert significant(1.23456) == 1.23
    assert significant(12.3456) == 12.3
    assert significant(123.456) == 123
    assert significant(12345.6) == 12346
    assert significant(-0.5678) == -0.568
    assert significant(0.0) == 0.0
    assert significant(169) == 169


def test_a_ratio_that_cannot_be_taken_is_none_whatever_the_cause() -> None:
    for value, baseline in ((5.0, 0.0), (0.0, 0.0), (math.inf, 2.0), (2.0, math.inf), (None, 1.0)):
        assert row("m", value, baseline, "ms")["ratio"] is None, (value, baseline)
    assert row("m", 1.0, 3.0, "ms")["ratio"] == 0.333


def test_figures_that_are_not_finite_become_none_and_json_stays_json() -> None:
    made = row("m", math.inf, math.nan, "s")
    assert made["value"] is None and made["baseline"] is None
    json.loads(json.dumps(made, allow_nan=False))


def test_a_ratio_measured_otherwise_is_kept_and_rounded_alike() -> None:
    assert row("m", 2.0, 1.0, "ms", ratio=1.23456)["ratio"] == 1.23


def test_the_table_prints_a_missing_ratio_as_a_dash() -> None:
    printed = table([{"suite": "s", **row("m", 4, 0, "keys")}])
    assert printed.splitlines()[-1] == "| s | m | 4 | 0 | - | keys |"
