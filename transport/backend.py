"""The seam between the completion pipeline and a completion service.

``CompletionBackend`` is what the language server talks to: it streams a
completion for a ``CompletionRequest``. The default implementation speaks HTTP
to an OpenAI-compatible, llama.cpp or Ollama service (``transport.http``);
plugin authors can implement the interface for their own service, and tests
use ``StaticBackend``, the fake that ships beside the seam.

Closing the async iterator returned by ``stream`` (``aclose()``, or
cancelling the task that iterates it) must cancel the upstream work.

An answer the service cut at the token limit ends with ``CUT_AT_LENGTH``, an
empty chunk: joined with the others it adds nothing, and ``is_cut`` tells the
cache that the answer's end is not where the model ended the line.

A backend that knows how sure the model was of its tokens yields them as
``ScoredText`` chunks: text with ``probability``, the lowest of its tokens'
(one chunk per token where the service allows). Asked for with
``CompletionRequest.probabilities``; a plain ``str`` chunk says nothing of
the model's confidence, and the pipeline then shows the answer as it would
without probabilities, so a backend written before them keeps working.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from transport.cost import REMOTE_SERVICE, ServiceCost

DEFAULT_MAX_TOKENS = 64
DEFAULT_TEMPERATURE = 0.0


class _LengthCut(str):
    """The type of ``CUT_AT_LENGTH``: an empty string that marks a cut answer."""

    __slots__ = ()


#: the last chunk of an answer the service cut at ``max_tokens`` (empty text)
CUT_AT_LENGTH: str = _LengthCut("")


def is_cut(chunk: str) -> bool:
    """Whether ``chunk`` is the ``CUT_AT_LENGTH`` mark of an answer cut at the token limit."""
    return isinstance(chunk, _LengthCut)


class ScoredText(str):
    """A chunk of an answer and how sure the model was of it (the lowest of its tokens')."""

    probability: float

    def __new__(cls, text: str, probability: float) -> ScoredText:
        """``text`` with ``probability`` in [0, 1] (clamped)."""
        chunk = super().__new__(cls, text)
        chunk.probability = min(1.0, max(0.0, probability))
        return chunk


def chunk_probability(chunk: str) -> float | None:
    """The model's probability of ``chunk``, or None when the backend did not say."""
    return chunk.probability if isinstance(chunk, ScoredText) else None


@dataclass(frozen=True, slots=True)
class ContextChunk:
    """Text from another file sent ahead of the prompt (cross-file context)."""

    #: the file's path as the model should see it (relative to the workspace)
    filename: str
    text: str


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    """One fill-in-the-middle completion to ask a service for."""

    prefix: str
    suffix: str
    language: str = "python"
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    stop: tuple[str, ...] = ()
    #: ask for several lines (block openers); otherwise the rest of the line
    multiline: bool = False
    #: generation time allowed once a line is complete, in ms (0: no limit)
    max_time_ms: int = 0
    #: the cursor line's indentation: a block's lines are indented more (0: not told)
    indent: int = 0
    #: correlates log lines; never contains user text
    request_id: str = ""
    #: background prefetch: lowest priority, first to be shed
    speculative: bool = False
    #: other files' chunks, in the order they are to be sent (least changing first)
    extra: tuple[ContextChunk, ...] = ()
    #: the current file's path as the model should see it, and the project's name
    filename: str = ""
    repo_name: str = ""
    #: the document's identity (its URI), for keeping its requests on one server slot
    document: str = ""
    #: ask for the tokens' probabilities (``ScoredText`` chunks) where the service gives them
    probabilities: bool = False


@dataclass(kw_only=True)
class TransportCounters:
    """What the transport did so far, for ``scopecache/stats``."""

    dns_lookups: int = 0
    connections_opened: int = 0
    requests: int = 0
    errors: int = 0
    retries: int = 0
    cancelled: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    circuit: str = "closed"
    #: HTTP/2 streams reset (RST_STREAM) because the caller stopped reading
    streams_reset: int = 0
    #: DNS answers that came from the system resolver after the nameservers failed
    dns_fallbacks: int = 0
    #: what the connection actually speaks: ``http/1.1``, ``h2`` or ``h2c`` ("" before one)
    protocol: str = ""
    #: HTTP/1.1: requests sent on a connection that had served before
    connections_reused: int = 0
    #: HTTP/1.1: connections closed because a stream was cancelled (the server stops)
    connections_closed_by_cancel: int = 0
    #: HTTP/1.1: connections the server closed (after a stream, idle, ``Connection: close``)
    connections_closed_by_server: int = 0
    #: HTTP/1.1: idle connections closed before the server's ``Keep-Alive`` timeout
    connections_retired: int = 0
    #: HTTP/1.1: requests that waited for a connect because no connection was ready
    connect_waits: int = 0
    #: HTTP/1.1: idle connections ready for the next request
    connections_ready: int = 0
    #: time to first text chunk over recent upstream requests, in milliseconds
    ttft_ms_p50: float = 0.0
    ttft_ms_p95: float = 0.0
    #: prompt tokens the service read, evaluated, and reused from its KV cache,
    #: and tokens it generated, as its answers reported them
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    #: answers that reported token numbers
    usage_reports: int = 0


class CompletionBackend(ABC):
    """A completion service as the pipeline sees it."""

    async def start(self) -> None:
        """Warm up before the first request (DNS, connections, tokens)."""
        return None

    @abstractmethod
    def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Stream the completion's text in chunks.

        Raises ``transport.errors.TransportError`` subclasses. Closing the
        iterator early cancels the request upstream.
        """

    async def aclose(self) -> None:
        """Release connections and background tasks."""
        return None

    def counters(self) -> TransportCounters:
        """Counters for stats; backends without a network report zeros."""
        return TransportCounters()

    def service(self) -> dict[str, Any]:
        """Which service was identified and which path is used (for stats and diagnose)."""
        return {}

    def cost(self) -> ServiceCost:
        """What cancelling a request saves on this service (``transport.cost``).

        The default is a remote service's: a cancelled request stops at once.
        """
        return REMOTE_SERVICE

    def prompt_prefix_chars(self) -> int | None:
        """The most prefix characters a request sends (None: all of them).

        A longer prefix is cut at its start, in steps of the backend's own;
        a prompt window that fits this keeps its start where it put it.
        """
        return None


Answer = Callable[[CompletionRequest], str]


class StaticBackend(CompletionBackend):
    """A backend answering from a function or a constant, for tests and embedding.

    ``delay`` is waited before the first chunk; the answer is streamed in
    chunks of ``chunk_size`` characters with ``chunk_delay`` between them;
    with ``cut`` it ends with ``CUT_AT_LENGTH``, as if cut at the token limit.
    ``calls`` records every request it was asked.
    """

    def __init__(
        self,
        answer: Answer | str,
        *,
        cut: bool = False,
        delay: float = 0.0,
        chunk_size: int = 4,
        chunk_delay: float = 0.0,
    ) -> None:
        self._answer: Answer = (lambda _r: answer) if isinstance(answer, str) else answer
        self._delay = delay
        self._chunk_size = max(1, chunk_size)
        self._chunk_delay = chunk_delay
        self._cut = cut
        self.calls: list[CompletionRequest] = []
        self.cancelled = 0
        self._counters = TransportCounters()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Yield the answer in chunks, honouring the configured delays."""
        self.calls.append(request)
        self._counters.requests += 1
        text = self._answer(request)
        finished = False
        try:
            if self._delay:
                await asyncio.sleep(self._delay)
            for start in range(0, len(text), self._chunk_size):
                if start and self._chunk_delay:
                    await asyncio.sleep(self._chunk_delay)
                yield text[start : start + self._chunk_size]
            if self._cut:
                yield CUT_AT_LENGTH
            finished = True
        finally:
            if not finished:
                self.cancelled += 1
                self._counters.cancelled += 1

    def counters(self) -> TransportCounters:
        """Return request and cancellation counts."""
        return self._counters
