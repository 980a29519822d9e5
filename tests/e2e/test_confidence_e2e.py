"""The model's confidence end to end: the real server against the reference service.

The reference service, started with ``--probabilities``, gives each token
the share of its corpus places that go on the same way: two copies of a
function that part at the last argument make that argument a coin toss
(0.5), the rest sure.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

CORPUS = (
    "def volume(depth):\n    total = scale(depth, 2)\n    return total\n\n\n"
    "def volume_b(depth):\n    total = scale(depth, 3)\n    return total\n"
)
URI = "file:///p/shapes.py"
TEXT = "def volume_c(depth):\n    total = "


@pytest.fixture(scope="module")
def parting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceService]:
    corpus = tmp_path_factory.mktemp("corpus") / "shapes.py"
    corpus.write_text(CORPUS)
    with ReferenceService(tls=True, corpus=[corpus], extra_args=["--probabilities"]) as service:
        yield service


def options(upstream: ReferenceService, **completion: Any) -> dict[str, Any]:
    return {
        "endpoint": upstream.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": str(upstream.ca_file)},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        "completion": completion,
    }


async def shown_then_typed_through(
    parting: ReferenceService, typed: str, **completion: Any
) -> tuple[str | None, str | None, dict[str, Any]]:
    """The suggestion after TEXT, the one after typing ``typed`` on, and the stats then."""
    parting.reset()
    async with ServerProcess(options(parting, **completion)) as server:
        server.open(URI, TEXT)
        first = await server.inline_text(URI, 1, 12)
        server.change(URI, [{"text": TEXT + typed}])
        rest = await server.inline_text(URI, 1, 12 + len(typed))
        stats = await server.stats()
    return first, rest, stats


async def test_a_suggestion_is_cut_where_the_service_is_unsure_and_keeps_its_cut_typed_through(
    parting: ReferenceService,
) -> None:
    first, rest, stats = await shown_then_typed_through(parting, "sc", minProbability=0.6)
    assert first == "scale(depth,"
    assert rest == "ale(depth,"
    assert stats["served"]["typed"] == 1 and stats["upstreamRequests"] == 1
    # one suggestion, typed through: shown once, not once per request
    assert stats["acceptance"]["shown"] == 1


async def test_below_the_bar_the_whole_suggestion_shows_and_confidence_off_asks_none(
    parting: ReferenceService,
) -> None:
    parting.reset()
    whole = options(parting, minProbability=0.4, minOnwardProbability=0)
    async with ServerProcess(whole) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 12) == "scale(depth, 2)"
    async with ServerProcess(options(parting, confidence=False, minProbability=0.9)) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 12) == "scale(depth, 2)"


async def test_past_its_first_token_the_onward_bar_cuts_a_suggestion_with_a_sure_start(
    parting: ReferenceService,
) -> None:
    # typed up to the coin toss, it is the suggestion's first token: the first bar judges it
    first, rest, stats = await shown_then_typed_through(
        parting, "scale(depth,", minProbability=0.4, minOnwardProbability=0.6
    )
    assert first == "scale(depth,"
    assert rest == " 2)"
    assert stats["served"]["typed"] == 1 and stats["upstreamRequests"] == 1


async def test_a_suggestion_whose_start_is_unsure_is_held_back_and_counted(
    parting: ReferenceService, tmp_path: Path
) -> None:
    parting.reset()
    async with ServerProcess(options(parting, minProbability=0.6)) as server:
        # "    total = scale(depth, " is in both copies; what follows parts at once
        server.open(URI, TEXT + "scale(depth,")
        assert await server.inline_text(URI, 1, 24) is None
        stats = await server.stats()
        assert stats["heldBack"] == {"unsure": 1, "lowKept": 0, "repeat": 0, "whitespace": 0}


async def test_a_recorded_session_scores_other_bars_from_its_side_record(
    parting: ReferenceService, tmp_path: Path
) -> None:
    from lsp_server.kit.confidence import answers_from_trace, score_bars

    parting.reset()
    trace = tmp_path / "session.jsonl"
    settings = {**options(parting, minProbability=0.6), "recordTrace": str(trace),
                "recordText": True}
    async with ServerProcess(settings) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 12) == "scale(depth,"
        # the developer writes the line as the second copy has it, and leaves it
        server.insert(URI, 1, 12, "scale(depth, 3)")
        server.insert(URI, 1, 27, "\n    ")
        await server.inline(URI, 2, 4)
    answers = answers_from_trace(trace)
    assert answers[0].answer == "scale(depth, 2)" and answers[0].expect == "scale(depth, 3)"
    low, high = score_bars(answers[:1], [0.4, 0.6])
    # at 0.4 the whole guess shows and is wrong; at 0.6 the sure part shows and is right
    assert (low.wrong, low.useful) == (1, 0)
    assert (high.useful, high.chars_saved) == (1, len("scale(depth,"))
