"""Suggestions with text after the cursor (``completion.midLine``), in the pipeline."""

from __future__ import annotations

import pytest
from lsprotocol import types

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.mid_line import closers_only, suggestion_allowed
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline, Suggestion
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import syntax_context
from lsp_server.observe.stats import ServerStats
from lsp_server.server.settings_codec import parse_settings
from lsp_server.settings import CompletionSettings, MidLine
from transport.backend import StaticBackend

URI = "file:///p/app.py"


def pipeline(
    answer: str, mid_line: MidLine = "closers"
) -> tuple[CompletionPipeline, StaticBackend]:
    backend = StaticBackend(answer)
    pipe = CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=MissThrottle(min_delay=0.0, max_delay=0.0),
        inflight=InflightRegistry(),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(mid_line=mid_line),
    )
    return pipe, backend


async def complete_at_bar(pipe: CompletionPipeline, line: str) -> Suggestion | None:
    """Complete on the one-line document ``line`` at the ``|``."""
    character = line.index("|")
    text = line.replace("|", "")
    doc = DocumentStore().open(URI, "python", 1, text)
    ctx = syntax_context(doc, types.Position(line=0, character=character))
    return await pipe.complete(URI, ctx, still_current=lambda: True)


async def test_text_after_the_cursor_that_is_not_a_closer_hides_the_suggestion() -> None:
    pipe, _ = pipeline("abc")
    assert await complete_at_bar(pipe, "zzqq|x") is None
    assert pipe.stats.mid_line_suppressed == 1
    assert pipe.stats.snapshot()["midLineSuppressed"] == 1


@pytest.mark.parametrize(
    "line", ["print(|)", 'name = "|"', "items = [|]", "call(f(|));", "x = {|}  "]
)
async def test_closing_brackets_and_quotes_after_the_cursor_still_get_a_suggestion(
    line: str,
) -> None:
    pipe, _ = pipeline("value")
    answer = await complete_at_bar(pipe, line)
    assert answer is not None and answer.text == "value"
    assert pipe.stats.mid_line_suppressed == 0


async def test_a_suggestion_that_ends_with_the_rest_of_the_line_is_shown_without_it() -> None:
    pipe, _ = pipeline("total = a + b")
    answer = await complete_at_bar(pipe, "|b")
    assert answer is not None and answer.text == "total = a + "


async def test_at_the_end_of_a_line_every_mode_shows_the_suggestion() -> None:
    for mode in ("closers", "always", "never"):
        pipe, _ = pipeline("value", mode)  # type: ignore[arg-type]
        answer = await complete_at_bar(pipe, "x = |")
        assert answer is not None and answer.text == "value", mode


async def test_always_shows_a_suggestion_before_any_text() -> None:
    pipe, _ = pipeline("abc", "always")
    answer = await complete_at_bar(pipe, "zzqq|x")
    assert answer is not None and answer.text == "abc"


async def test_never_does_not_ask_upstream_with_text_after_the_cursor() -> None:
    pipe, backend = pipeline("value", "never")
    assert await complete_at_bar(pipe, "print(|)") is None
    assert backend.calls == []
    assert pipe.stats.mid_line_suppressed == 1 and pipe.stats.requests == 1


async def test_a_hidden_mid_line_answer_is_still_cached_for_the_end_of_the_line() -> None:
    pipe, backend = pipeline("abc")
    assert await complete_at_bar(pipe, "zzqq|x") is None
    assert len(backend.calls) == 1
    assert len(pipe.store) == 1  # the answer itself was fine; only showing it was not


def test_closers_are_brackets_quotes_whitespace_and_one_final_separator() -> None:
    assert closers_only(")") and closers_only('")') and closers_only("]) ;") and closers_only("")
    assert closers_only("`") and closers_only("'}:")
    assert not closers_only("x") and not closers_only(") + 1") and not closers_only(";;")
    assert suggestion_allowed("closers", "  ", "anything")
    assert not suggestion_allowed("closers", "x", "abc\nx")  # only the first line counts


def test_mid_line_is_a_completion_setting_with_closers_as_default() -> None:
    assert CompletionSettings().mid_line == "closers"
    settings, problems = parse_settings({"completion": {"midLine": "never"}})
    assert problems == [] and settings.completion.mid_line == "never"
    _, problems = parse_settings({"completion": {"midLine": "sometimes"}})
    assert problems and problems[0].startswith("completion.midLine: must be one of")
