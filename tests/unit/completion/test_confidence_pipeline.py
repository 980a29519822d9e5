"""The model's confidence through the pipeline: cut on the way out, kept in the cache."""

from __future__ import annotations

from collections.abc import AsyncIterator

from lsprotocol import types

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.gate import ShowBar
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from tests.support.conditions import until
from transport.backend import CompletionBackend, CompletionRequest, ScoredText

URI = "file:///p/app.py"
TEXT = "def scaled(values, factor):\n    result = "


class ScoredBackend(CompletionBackend):
    """Answers with tokens and the probability the model gave each."""

    def __init__(self, tokens: list[tuple[str, float]]) -> None:
        self.tokens = tokens
        self.calls: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        self.calls.append(request)
        for text, probability in self.tokens:
            yield ScoredText(text, probability) if request.probabilities else text


def pipeline(backend: CompletionBackend, **settings: object) -> CompletionPipeline:
    return CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=MissThrottle(min_delay=0.0, max_delay=0.0),
        inflight=InflightRegistry(),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(**settings),  # type: ignore[arg-type]
    )


def context(text: str) -> SyntaxContext:
    doc = DocumentStore().open(URI, "python", 1, text)
    lines = text.split("\n")
    return syntax_context(doc, types.Position(line=len(lines) - 1, character=len(lines[-1])))


ANSWER = [("scale", 0.97), ("(", 0.99), ("values", 0.9), (",", 0.95), (" factor", 0.2), (")", 0.9)]


async def shown(pipe: CompletionPipeline, typed: str = "") -> str | None:
    answer = await pipe.complete(URI, context(TEXT + typed), still_current=lambda: True)
    return None if answer is None else answer.text


async def test_a_fresh_answer_is_shown_up_to_its_first_unsure_token() -> None:
    backend = ScoredBackend(ANSWER)
    pipe = pipeline(backend, min_probability=0.5)
    assert await shown(pipe) == "scale(values,"
    assert backend.calls[0].probabilities


async def test_a_typed_through_hit_keeps_its_cut_until_the_unsure_token_is_typed() -> None:
    backend = ScoredBackend(ANSWER)
    pipe = pipeline(backend, min_probability=0.5)
    assert await shown(pipe) == "scale(values,"
    assert await shown(pipe, "sca") == "le(values,"
    # the user wrote the unsure token's start: the rest of the answer is sure
    assert await shown(pipe, "scale(values, f") == "actor)"
    assert len(backend.calls) == 1


async def test_an_answer_whose_start_is_unsure_is_held_back_and_counted() -> None:
    pipe = pipeline(ScoredBackend([("maybe", 0.1), ("(x)", 0.99)]), min_probability=0.5)
    assert await shown(pipe) is None
    assert pipe.stats.snapshot()["heldBack"] == {
        "unsure": 1, "lowKept": 0, "repeat": 0, "whitespace": 0
    }
    # asked again from memory: held back again, not asked upstream again
    assert await shown(pipe) is None
    assert pipe.stats.held_back["unsure"] == 2 and pipe.stats.upstream_requests == 1


async def test_with_confidence_off_nothing_is_asked_and_nothing_cut() -> None:
    backend = ScoredBackend(ANSWER)
    pipe = pipeline(backend, confidence=False, min_probability=0.5)
    assert await shown(pipe) == "scale(values, factor)"
    assert not backend.calls[0].probabilities


async def test_the_bar_comes_from_the_show_bar_seam_per_language_scope_and_source() -> None:
    asked: list[tuple[str, str, str]] = []

    def bar(language: str, scope: str, source: str) -> ShowBar:
        asked.append((language, scope, source))
        return ShowBar(min_probability=0.1 if source == "upstream" else 0.95)

    pipe = pipeline(ScoredBackend(ANSWER), min_probability=0.5)
    pipe.show_bar = bar
    assert await shown(pipe) == "scale(values, factor)"
    assert await shown(pipe) == "scale("  # from memory, under a higher bar
    assert asked == [("python", "function_definition", "upstream"),
                     ("python", "function_definition", "exact")]


class LinesBackend(CompletionBackend):
    """Answers each request with the next scored answer, one token per chunk."""

    def __init__(self, answers: list[list[tuple[str, float]]]) -> None:
        self.answers = answers
        self.calls: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        tokens = self.answers[min(len(self.calls), len(self.answers) - 1)]
        self.calls.append(request)
        for text, probability in tokens:
            yield ScoredText(text, probability)


BODY = "def scaled(values, factor):\n"


async def test_a_sure_answer_runs_on_and_its_next_line_is_served_from_memory() -> None:
    first = [("factor", 0.9), (" * 2", 0.9), ("\n", 0.9)]
    sure_lines = [("[]", 0.9), ("\n", 0.99), ("    ", 0.99), ("for", 0.9), (" v", 0.8),
                  (" in", 0.99), (" values", 0.9), (":", 0.99), ("\n", 0.9), ("    ", 0.9),
                  ("zzz", 0.05), ("\n", 0.9)]
    backend = LinesBackend([first, sure_lines])
    pipe = pipeline(backend, min_probability=0.3, run_on=True)
    # the first answer teaches that the service scores its tokens: asked for one line
    ctx = context(BODY + "    double = ")
    answer = await pipe.complete(URI, ctx, still_current=lambda: True)
    assert answer is not None and answer.text == "factor * 2"
    assert not backend.calls[0].multiline
    # the next miss runs on past its line, and stops before the unsure one
    answer = await pipe.complete(URI, context(BODY + "    out = "), still_current=lambda: True)
    assert backend.calls[1].multiline
    assert answer is not None and answer.text.split("\n")[0] == "[]"

    async def finished() -> bool:
        return not pipe.inflight.at_service()

    await until(finished, "the run-on stream ends")
    # the user writes the line and presses Enter: the next line is in memory
    follow = await pipe.complete(
        URI, context(BODY + "    out = []\n    "), still_current=lambda: True
    )
    assert follow is not None and (follow.text, follow.source) == ("for v in values:", "typed")
    assert len(backend.calls) == 2
