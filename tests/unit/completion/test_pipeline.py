"""The completion pipeline in process, with the fake backend at the transport seam."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from lsprotocol import types

from cache.entry import CachedCompletion
from cache.keys import ScopeKey
from cache.l2.memory import MemoryHub, MemoryStore
from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline
from lsp_server.completion.speculate import SpeculativePrefetcher
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings, SpeculativeSettings
from tests.support.conditions import until
from transport.backend import CompletionBackend, CompletionRequest, StaticBackend
from transport.errors import StreamResetError

URI = "file:///p/app.py"
TEXT = "def greet(name):\n    message = "


class FailingBackend(CompletionBackend):
    """Streams a few characters, then the connection breaks."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        self.calls += 1
        yield '"Hel'
        raise StreamResetError("connection reset mid-stream")


def pipeline(backend: CompletionBackend) -> tuple[CompletionPipeline, list[str]]:
    shown: list[str] = []
    notifier = UserNotifier(lambda params: shown.append(params.message))
    return (
        CompletionPipeline(
            store=CompletionStore(make_policy("hybrid", 64)),
            backend=backend,
            stats=ServerStats(),
            throttle=MissThrottle(min_delay=0.0, max_delay=0.0),
            inflight=InflightRegistry(),
            notifier=notifier,
            completion=CompletionSettings(),
        ),
        shown,
    )


def context(text: str, line: int, character: int) -> SyntaxContext:
    doc = DocumentStore().open(URI, "python", 1, text)
    return syntax_context(doc, types.Position(line=line, character=character))


async def test_a_miss_goes_upstream_once_then_exact_then_typed_through() -> None:
    backend = StaticBackend('"Hello, " + name')
    pipe, _ = pipeline(backend)
    first = await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True)
    assert first is not None and (first.text, first.source) == ('"Hello, " + name', "upstream")
    again = await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True)
    assert again is not None and again.source == "exact"
    typed = await pipe.complete(URI, context(TEXT + '"He', 1, 17), still_current=lambda: True)
    assert typed is not None and (typed.text, typed.source) == ('llo, " + name', "typed")
    assert len(backend.calls) == 1
    assert pipe.stats.upstream_requests == 1 and pipe.stats.requests == 3


async def test_an_answer_for_a_buffer_that_moved_on_is_not_shown() -> None:
    pipe, _ = pipeline(StaticBackend("x"))
    answer = await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: False)
    assert answer is None
    assert pipe.stats.rejected_stale == 1


async def test_a_broken_stream_is_never_cached_and_told_once() -> None:
    backend = FailingBackend()
    pipe, shown = pipeline(backend)
    for _ in range(3):
        assert await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True) is None
    assert backend.calls == 3  # nothing was stored: every request asked again
    assert len(pipe.store) == 0
    assert pipe.stats.upstream_errors == 3
    assert len(shown) == 1 and "completion service failed" in shown[0]


async def test_without_a_backend_misses_are_empty_answers() -> None:
    pipe, _ = pipeline(StaticBackend("x"))
    pipe.backend = None
    assert await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True) is None
    assert pipe.stats.empty == 1


NEXT_LINE = 'def greet(name):\n    message = "Hello"\n    '
PREDICTED = (1, '    message = "Hello"')


def sharing(backend: CompletionBackend, hub: MemoryHub) -> CompletionPipeline:
    pipe, _ = pipeline(backend)
    pipe.l2 = MemoryStore("ns", hub=hub)
    return pipe


async def shared(hub: MemoryHub) -> bool:
    return bool(hub.rows)


async def test_a_prefetch_another_window_already_made_is_taken_from_l2() -> None:
    hub = MemoryHub()
    first = sharing(StaticBackend("return message"), hub)
    assert first.prefetch(URI, context(NEXT_LINE, 2, 4), predicted=PREDICTED)
    await until(lambda: shared(hub), "the first window's prefetch to reach L2")
    second_backend = StaticBackend("never asked")
    second = sharing(second_backend, hub)
    assert second.prefetch(URI, context(NEXT_LINE, 2, 4), predicted=PREDICTED)

    async def prefetched() -> bool:
        return not second.speculating(URI)

    await until(prefetched, "the second window's prefetch to finish")
    assert second_backend.calls == [] and second.stats.upstream_requests == 0
    assert second.stats.speculative_l2_prefetches == 1
    served = await second.complete(URI, context(NEXT_LINE, 2, 4), still_current=lambda: True)
    assert served is not None and (served.text, served.source) == ("return message", "speculative")
    assert second.stats.speculative_l2_served == 1


async def test_nothing_to_suggest_is_shared_so_other_windows_do_not_ask_again() -> None:
    hub = MemoryHub()
    first = sharing(StaticBackend(""), hub)
    assert await first.complete(URI, context(TEXT, 1, 14), still_current=lambda: True) is None
    await until(lambda: shared(hub), "the empty answer to reach L2")
    second_backend = StaticBackend("never asked")
    second = sharing(second_backend, hub)
    assert await second.complete(URI, context(TEXT, 1, 14), still_current=lambda: True) is None
    assert second_backend.calls == [] and second.stats.empty == 1


async def test_upstream_requests_name_their_document_for_slot_pinning() -> None:
    backend = StaticBackend("x")
    pipe, _ = pipeline(backend)
    await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True)
    assert [request.document for request in backend.calls] == [URI]


class NarrowBackend(StaticBackend):
    """A backend that sends at most ``limit`` prefix characters of a request."""

    def __init__(self, answer: str, limit: int) -> None:
        super().__init__(answer)
        self.limit = limit

    def prompt_prefix_chars(self) -> int | None:
        return self.limit


async def test_a_miss_sends_a_prefix_within_what_the_backend_sends() -> None:
    lines = "".join(f"value_{n} = compute({n})\n" for n in range(400))
    backend = NarrowBackend("x", limit=500)
    pipe, _ = pipeline(backend)
    await pipe.complete(URI, context(lines + "total = ", 400, 8), still_current=lambda: True)
    (request,) = backend.calls
    # whole lines up to the cursor's, within the backend's limit, not the settings' 4,000
    assert 400 < len(request.prefix) <= 500
    assert request.prefix.startswith("value_") and request.prefix.endswith("\ntotal = ")


class EditingTier:
    """An L2 in whose lookup the user types on: the document changes mid-request."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc

    async def get(self, key: ScopeKey) -> CachedCompletion | None:
        end = types.Position(line=1, character=14)
        self.doc.apply_changes(
            [types.TextDocumentContentChangePartial(range=types.Range(start=end, end=end),
                                                    text="'typed on'")]
        )
        return None

    async def put(self, entry: CachedCompletion) -> None:
        return None


async def test_a_hit_never_reads_the_prompt() -> None:
    pipe, _ = pipeline(StaticBackend('"Hello, " + name'))
    await pipe.complete(URI, context(TEXT, 1, 14), still_current=lambda: True)
    hit = context(TEXT, 1, 14)
    answer = await pipe.complete(URI, hit, still_current=lambda: True)
    assert answer is not None and answer.source == "exact"
    assert not hit.prompt.is_read


async def test_a_miss_sends_the_text_it_was_asked_for_though_the_user_typed_on_meanwhile() -> None:
    backend = StaticBackend('"Hello, " + name')
    pipe, _ = pipeline(backend)
    doc = DocumentStore().open(URI, "python", 1, TEXT)
    pipe.l2 = EditingTier(doc)
    ctx = syntax_context(doc, types.Position(line=1, character=14))
    await pipe.complete(URI, ctx, still_current=lambda: True)
    assert doc.text.endswith("'typed on'")
    assert [request.prefix for request in backend.calls] == [TEXT]


class StalledBackend(CompletionBackend):
    """Streams ``chunks``, then stalls until the stream is cancelled (or fails, with ``error``)."""

    def __init__(self, *chunks: str, error: Exception | None = None) -> None:
        self.chunks = chunks
        self.error = error
        self.stalled = asyncio.Event()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        for chunk in self.chunks:
            yield chunk
        if self.error is not None:
            raise self.error
        self.stalled.set()
        await asyncio.Event().wait()


BODY = "def greet(name):\n    "


async def cut_off(backend: StalledBackend, hub: MemoryHub) -> CompletionPipeline:
    """A block opener's answer streamed in part, then the user closes the document."""
    pipe = sharing(backend, hub)
    ctx = context(BODY, 1, 4)
    assert ctx.block_opener
    request = asyncio.ensure_future(pipe.complete(URI, ctx, still_current=lambda: True))
    await backend.stalled.wait()
    stream = pipe.inflight.busy(URI)
    assert stream is not None and stream.task is not None
    pipe.inflight.cancel_document(URI)
    await asyncio.wait([stream.task])
    await request
    await pipe.upstream.flush(1.0)
    return pipe


async def test_a_stream_cut_off_keeps_its_finished_lines_marked_cut_for_every_window() -> None:
    hub = MemoryHub()
    backend = StalledBackend("for part in name:\n", "        print(part)\n", "    ret")
    first = await cut_off(backend, hub)
    assert first.stats.cut_answers_kept == 1
    await until(lambda: shared(hub), "the finished lines to reach L2")
    second_backend = StaticBackend("never asked")
    second = sharing(second_backend, hub)
    served = await second.complete(URI, context(BODY, 1, 4), still_current=lambda: True)
    assert served is not None and served.source == "l2"
    assert served.text == "for part in name:\n        print(part)"
    assert second_backend.calls == []
    (row,) = hub.rows.values()
    assert row.entry.truncated  # never taken for the end of the model's answer


async def test_a_stream_cut_off_before_its_first_line_ends_keeps_nothing() -> None:
    hub = MemoryHub()
    first = await cut_off(StalledBackend("for part in"), hub)
    assert first.stats.cut_answers_kept == 0 and len(first.store) == 0 and not hub.rows


async def test_a_stream_that_fails_after_finished_lines_keeps_nothing() -> None:
    hub = MemoryHub()
    backend = StalledBackend("for part in name:\n", error=StreamResetError("reset"))
    pipe = sharing(backend, hub)
    await pipe.complete(URI, context(BODY, 1, 4), still_current=lambda: True)
    await pipe.upstream.flush(1.0)
    assert pipe.stats.cut_answers_kept == 0 and len(pipe.store) == 0 and not hub.rows


async def prefetch_done(pipe: CompletionPipeline) -> None:
    async def done() -> bool:
        return not pipe.speculating(URI)

    await until(done, "the prefetch to finish")


async def test_a_prefetch_that_may_not_ask_looks_in_l2_only() -> None:
    backend = StaticBackend("never asked")
    pipe = sharing(backend, MemoryHub())
    assert pipe.prefetch(URI, context(NEXT_LINE, 2, 4), predicted=PREDICTED, ask=False)
    await prefetch_done(pipe)
    assert backend.calls == [] and pipe.stats.upstream_requests == 0
    assert pipe.stats.speculative_l2_unanswered == 1


async def test_after_a_suggestion_from_l2_speculation_asks_nothing_and_spends_no_budget() -> None:
    backend = StaticBackend("return message")
    pipe = sharing(backend, MemoryHub())
    speculator = SpeculativePrefetcher(SpeculativeSettings(max_per_minute=1))
    doc = DocumentStore().open(URI, "python", 1, TEXT)
    ctx = syntax_context(doc, types.Position(line=1, character=14))
    assert speculator.after_served(doc, ctx, '"Hello"', pipe, syntax_context, from_l2=True)
    await prefetch_done(pipe)
    assert backend.calls == [] and pipe.stats.speculative_l2_unanswered == 1
    # The one prefetch a minute is still there for a suggestion fetched here.
    assert speculator.after_served(doc, ctx, '"Hi"', pipe, syntax_context)
    await prefetch_done(pipe)
    assert len(backend.calls) == 1 and pipe.stats.speculative_requests == 1
