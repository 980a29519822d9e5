"""Other languages through the real server and the reference service: keys, hits, stats."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import synthesize
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.greet import requests_seen

pytestmark = pytest.mark.e2e

GO = """\
package shop

func Total(prices []int) int {
\tsum := 0
\tfor _, p := range prices {
\t\tsum += p
\t}
\treturn sum
}

func Count(items []string) int {
\tn := len(items)
\treturn n
}
"""

TS = """\
export function greet(name: string): string {
  const message = "Hello, " + name.toUpperCase();
  return message;
}
"""

GO_URI = "file:///work/project/shop.go"
TS_URI = "file:///work/project/greet.ts"
MD_URI = "file:///work/project/notes.md"


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    (tmp_path / "shop.go").write_text(GO)
    (tmp_path / "greet.ts").write_text(TS)
    async with ReferenceProcess([tmp_path]) as svc:
        yield svc


def options(service: ReferenceProcess) -> dict[str, object]:
    return {
        "endpoint": service.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
    }


async def test_a_go_function_is_completed_cached_and_kept_across_an_edit_elsewhere(
    service: ReferenceProcess,
) -> None:
    head = GO[: GO.index("n := ") + len("n := ")]
    line, col = head.count("\n"), len(head.split("\n")[-1])
    async with ServerProcess(options(service)) as server:
        server.open(GO_URI, head + "\n\treturn n\n}\n", "go")
        assert await server.inline_text(GO_URI, line, col) == "len(items)"
        assert requests_seen(await service.stats()) == 1
        # an edit in the other function: the Go scope key still matches
        server.insert(GO_URI, 4, 0, "\t// sum every price\n")
        assert await server.inline_text(GO_URI, line + 1, col) == "len(items)"
        assert requests_seen(await service.stats()) == 1
        stats = await server.stats()
        assert stats["served"]["exact"] == 1


async def test_stats_tell_which_languages_are_parsed_and_which_are_text_only(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(GO_URI, GO, "go")
        server.open(TS_URI, TS[: TS.index("= ") + 2], "typescript")
        server.open(MD_URI, "# Notes\n\nThe total is ", "markdown")
        assert await server.inline_text(TS_URI, 1, len('  const message = ')) is not None
        await server.inline_text(MD_URI, 2, len("The total is "))
        languages = (await server.stats())["languages"]
        assert languages["go"] == {"documents": 1, "requests": 0, "parsed": 1, "text": 0}
        assert languages["typescript"] == {"documents": 1, "requests": 1, "parsed": 1, "text": 0}
        assert languages["markdown"] == {"documents": 1, "requests": 1, "parsed": 0, "text": 1}


DATA = Path(__file__).resolve().parents[1] / "data" / "languages"


@pytest.mark.parametrize("name", ["scheduler.ts", "cache.go"])
async def test_a_replayed_session_is_served_mostly_from_cache_and_as_useful_as_no_cache(
    name: str,
) -> None:
    path = DATA / name
    head = "\n".join(path.read_text(encoding="utf-8").split("\n")[:40]) + "\n"
    trace = synthesize({f"file:///work/project/{name}": head}, seed=7)
    runs = {}
    for policy in ("hybrid", "none"):
        result = await replay_trace(trace, settings={"cache": {"policy": policy, "l2": "none"}})
        runs[policy] = result.summary()
    hybrid, none = runs["hybrid"], runs["none"]
    # upstream calls of every kind (asked for and speculative) against requests
    assert hybrid["upstreamRequests"] <= 0.15 * hybrid["requests"], hybrid
    assert hybrid["useful"] >= none["useful"], (hybrid["useful"], none["useful"])
