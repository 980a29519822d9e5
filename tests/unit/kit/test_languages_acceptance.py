"""The bar Python meets, in every core language, on realistic files that are not the samples.

A synthesized developer writes each file of ``tests/data/languages`` (a
file per core language, written for these tests); the requests are run
through the server's own keys, contexts and cache (``scopecache simulate``,
with the reference engine's answers). Per language: the hybrid policy
answers at least 85% of requests without an upstream call, never serves
text that no longer fits, and is no less useful than no cache at all.
``tests/e2e/test_languages_e2e.py`` replays Go and TypeScript sessions
through the real server process as well.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.documents.languages import default_registry
from lsp_server.kit.simulate import untimed as simulate
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.writer import write_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "languages"
FILES = sorted(DATA.iterdir())
#: every core language except Python (whose bar is tested with its samples)
CORE = ("javascript", "typescript", "go", "rust", "java", "c", "cpp")


def test_there_is_a_realistic_file_for_every_core_language() -> None:
    registry = default_registry()
    found = {spec.name for p in FILES if (spec := registry.for_uri(p.name)) is not None}
    assert set(CORE) <= found
    for path in FILES:
        assert path.read_text(encoding="utf-8").count("\n") >= 90, path.name


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hybrid_serves_85_percent_without_upstream_never_stale_and_as_useful_as_none(
    tmp_path: Path, path: Path
) -> None:
    trace = tmp_path / "session.jsonl"
    write_trace(trace, synthesize({path.resolve().as_uri(): path.read_text()}, seed=7))
    requests = collect_requests(trace)
    results = simulate.simulate(requests, policies=["hybrid", "none"], capacities=[256])
    hybrid, none = (r for r in results)
    assert hybrid.policy == "hybrid" and none.policy == "none"
    assert hybrid.hits >= 0.85 * hybrid.requests, (hybrid.hits, hybrid.requests)
    assert hybrid.stale == 0
    assert hybrid.useful >= none.useful
