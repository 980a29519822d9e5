"""The diagnose line that names the source whose suggestions the developer kept least.

It reads a running server's ``scopecache/stats`` (``--metrics-url``: its
``/stats.json`` or a file holding the answer) and ranks the sources by the
share of their accepted characters still in the file after the short window
(``acceptance.bySource``: ``retainedChars30s`` of ``measuredChars30s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lsp_server.diagnose.client import read_server_stats
from lsp_server.diagnose.report import Measurement, failing, info, skipped

NAME = "least kept source"
#: a source is ranked once this many of its accepted characters were counted
MIN_MEASURED_CHARS = 20


def kept_shares(acceptance: Mapping[str, Any]) -> dict[str, float]:
    """Per source with enough counted characters: the share kept after the short window."""
    shares: dict[str, float] = {}
    by_source = acceptance.get("bySource")
    if not isinstance(by_source, Mapping):
        return shares
    for source, counts in by_source.items():
        if not isinstance(counts, Mapping):
            continue
        measured = counts.get("measuredChars30s", 0)
        kept = counts.get("retainedChars30s", 0)
        if isinstance(measured, int) and isinstance(kept, int) and measured >= MIN_MEASURED_CHARS:
            shares[str(source)] = kept / measured
    return shares


def least_kept(stats: Mapping[str, Any]) -> Measurement:
    """The line for a stats answer (see the module docstring)."""
    acceptance = stats.get("acceptance")
    if not isinstance(acceptance, Mapping):
        return skipped(NAME, "the server reports no acceptance (an older scopecache?)")
    shares = kept_shares(acceptance)
    windows = acceptance.get("windowsSeconds") or [30, 120]
    short = windows[0] if isinstance(windows, list) and windows else 30
    if not shares:
        return skipped(
            NAME,
            f"no source has {MIN_MEASURED_CHARS} accepted characters counted yet (counted "
            f"{short:g} s after each accept; accept some suggestions and look again)",
        )
    ranked = sorted(shares.items(), key=lambda item: (item[1], item[0]))
    worst, share = ranked[0]
    others = ", ".join(f"{source} {100 * s:.0f}%" for source, s in ranked)
    hint = f"kept after {short:g} s by source: {others}"
    muted = acceptance.get("mutedSources")
    if isinstance(muted, list) and muted:
        hint += f"; muted now: {', '.join(str(m) for m in muted)}"
    elif len(ranked) > 1:
        hint += (
            "; acceptance.muteBelow stops serving from a source whose suggestions are kept "
            "too little"
        )
    return info(NAME, f"{worst} ({100 * share:.0f}% kept)", hint=hint)


def acceptance_measurement(source: str | None) -> Measurement:
    """The least kept source of the server at ``--metrics-url``."""
    if source is None:
        return skipped(NAME, "pass --metrics-url to see which source's suggestions are kept least")
    try:
        stats = read_server_stats(source)
    except ValueError as exc:
        return failing(NAME, str(exc))
    return least_kept(stats)
