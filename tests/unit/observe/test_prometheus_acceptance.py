"""Acceptance in the Prometheus exposition: by source, language and scope, bounded labels."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from lsp_server.observe.metrics import MetricsRegistry
from lsp_server.observe.prometheus import (
    FAMILIES,
    MAX_LABEL_VALUES,
    OTHER,
    LabelValues,
    exposition,
)


def counts(shown: int, kept: int = 0) -> dict[str, int]:
    return {
        "shown": shown, "accepted": shown // 2, "acceptedChars": 10 * shown,
        "retainedChars30s": kept, "retainedChars120s": kept // 2,
        "measuredChars30s": 10 * shown, "measuredChars120s": 10 * shown,
        "typedThrough": shown // 4,
    }  # fmt: skip


def scrape(acceptance: dict[str, Any], labels: LabelValues | None = None) -> dict[str, Any]:
    body, _ = exposition({"acceptance": acceptance}, MetricsRegistry(), labels)
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def values(families: dict[str, Any], name: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(s.labels.values()): s.value
        for s in families[name].samples
        if s.name.endswith("_total")
    }


def test_acceptance_is_exported_by_language_and_by_scope_as_well_as_by_source() -> None:
    families = scrape(
        {
            "bySource": {"upstream": counts(4, 30)},
            "byLanguage": {"python": counts(3, 20), "go": counts(1, 10)},
            "byScope": {"function_definition": counts(4, 30)},
        }
    )
    assert values(families, "scopecache_suggestions_shown") == {("upstream",): 4}
    assert values(families, "scopecache_suggestions_shown_by_language") == {
        ("go",): 1,
        ("python",): 3,
    }
    assert values(families, "scopecache_retained_chars_by_language") == {
        ("go", "short"): 10, ("go", "long"): 5, ("python", "short"): 20, ("python", "long"): 10,
    }  # fmt: skip
    assert values(families, "scopecache_accepted_chars_by_scope") == {("function_definition",): 40}
    assert values(families, "scopecache_suggestions_typed_through_by_language") == {
        ("go",): 0,
        ("python",): 0,
    }
    assert values(families, "scopecache_suggestions_typed_through") == {("upstream",): 1}
    measured = values(families, "scopecache_retained_measured_chars_by_scope")
    assert measured[("function_definition", "long")] == 40


def test_label_values_past_the_cap_are_added_up_as_other() -> None:
    languages = {f"lang{n:02d}": counts(100 - n, 1) for n in range(MAX_LABEL_VALUES + 3)}
    shown = values(scrape({"byLanguage": languages}), "scopecache_suggestions_shown_by_language")
    assert len(shown) == MAX_LABEL_VALUES + 1
    # the most shown keep their own label; the three least shown are one series
    assert shown[(OTHER,)] == sum(100 - n for n in range(MAX_LABEL_VALUES, MAX_LABEL_VALUES + 3))
    assert sum(shown.values()) == sum(c["shown"] for c in languages.values())


def test_a_label_value_once_exported_keeps_its_series_so_counters_only_grow() -> None:
    labels = LabelValues(cap=2)
    first = {"python": counts(1), "go": counts(1)}
    assert set(
        values(scrape({"byScope": first}, labels), "scopecache_suggestions_shown_by_scope")
    ) == {("go",), ("python",)}
    later = {"python": counts(2), "go": counts(1), "rust": counts(50), "c": counts(3)}
    shown = values(scrape({"byScope": later}, labels), "scopecache_suggestions_shown_by_scope")
    # rust is shown most now, but go and python had the two labels first
    assert shown == {("go",): 1, ("python",): 2, (OTHER,): 53}


def test_each_family_has_one_home_and_one_name() -> None:
    stats: dict[str, Any] = {"acceptance": {"bySource": {"exact": counts(1)}}}
    names: list[str] = []
    for families in FAMILIES:
        names += [f.name for f in families(stats, MetricsRegistry(), LabelValues())]
    assert len(names) == len(set(names))
    assert all(name.startswith("scopecache_") for name in names)
