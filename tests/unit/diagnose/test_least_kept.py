"""The diagnose line naming the source whose accepted suggestions were kept least."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsp_server.diagnose.acceptance import acceptance_measurement, least_kept


def counts(measured: int, kept: int) -> dict[str, int]:
    return {"shown": 10, "accepted": 3, "acceptedChars": measured,
            "retainedChars30s": kept, "measuredChars30s": measured}  # fmt: skip


def stats(**by_source: dict[str, int]) -> dict[str, Any]:
    return {"acceptance": {"bySource": by_source, "windowsSeconds": [30.0, 120.0]}}


def test_the_source_that_kept_the_smallest_share_is_named_with_every_share() -> None:
    line = least_kept(stats(exact=counts(100, 90), upstream=counts(200, 80), typed=counts(5, 0)))
    assert line.name == "least kept source"
    assert line.value == "upstream (40% kept)"
    assert line.verdict == "ok"
    assert line.hint is not None
    assert line.hint.startswith("kept after 30 s by source: upstream 40%, exact 90%")
    assert "typed" not in line.hint  # five characters are too few to rank
    assert "acceptance.muteBelow" in line.hint


def test_muted_sources_are_mentioned() -> None:
    data = stats(upstream=counts(200, 10))
    data["acceptance"]["mutedSources"] = ["upstream"]
    assert "muted now: upstream" in (least_kept(data).hint or "")


def test_nothing_counted_yet_or_no_acceptance_is_skipped(tmp_path: Path) -> None:
    assert least_kept(stats()).verdict == "skipped"
    assert least_kept({"requests": 3}).verdict == "skipped"
    assert acceptance_measurement(None).verdict == "skipped"
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(stats(exact=counts(50, 50))))
    assert acceptance_measurement(str(path)).value == "exact (100% kept)"
    assert acceptance_measurement(str(tmp_path / "missing.json")).verdict == "failing"
