"""The pipeline's upstream step: start a stream, wait for its text, store the answer once.

A stream is started for a miss (or a speculative prefetch) with the request
built from the syntax context and the completion settings. When it ends
normally its text is stored in L1 and shared with the L2 tier (an empty
answer only in L2, as "nothing to suggest here"); errors and cut-off streams
are never stored. Waiting turns the service's failures into
one notice for the user (``auth``, ``upstream``) and an empty answer.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import TYPE_CHECKING

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from lsp_server.cross_file import PromptContext
from lsp_server.inflight import InflightStream
from lsp_server.metrics import timed_stream
from lsp_server.notify import UserNotifier
from lsp_server.settings import CompletionSettings
from lsp_server.syntax import SyntaxContext
from transport.backend import CompletionRequest
from transport.errors import AuthError, TransportError

if TYPE_CHECKING:
    from lsp_server.pipeline import CompletionPipeline


class UpstreamStreams:
    """Starts the pipeline's upstream streams and waits for their answers."""

    def __init__(
        self,
        pipeline: CompletionPipeline,
        *,
        notifier: UserNotifier,
        completion: CompletionSettings,
    ) -> None:
        # The caches, the backend, the throttle and the counters are the pipeline's.
        self._pipeline = pipeline
        self.notifier = notifier
        self.completion = completion
        self._ids = itertools.count(1)
        self._background: set[asyncio.Task[None]] = set()

    def start(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        *,
        predicted: tuple[int, str] | None = None,
    ) -> InflightStream:
        """Start an upstream stream whose answer is stored when it ends."""
        pipeline = self._pipeline
        backend, clock, throttle, inflight = (
            pipeline.backend, pipeline.clock, pipeline.throttle, pipeline.inflight
        )
        assert backend is not None
        speculative = predicted is not None
        context = (
            pipeline.prompt_context(uri) if pipeline.prompt_context is not None else PromptContext()
        )
        request = CompletionRequest(
            prefix=ctx.prompt_prefix,
            suffix=ctx.prompt_suffix,
            language=ctx.language,
            max_tokens=self.completion.max_tokens,
            temperature=self.completion.temperature,
            stop=tuple(self.completion.stop),
            multiline=self.completion.multiline and ctx.block_opener,
            request_id=f"r{next(self._ids)}",
            speculative=speculative,
            extra=context.extra,
            filename=context.filename,
            repo_name=context.repo_name,
        )
        started = clock()

        def on_complete(stream: InflightStream) -> None:
            throttle.note_ttft(clock() - started)
            if throttle.ttft is not None:
                inflight.adapt_grace(throttle.ttft)
            if not stream.text:
                # "Nothing to suggest here" is an answer too: other processes
                # sharing the L2 need not ask again (L1 keeps only suggestions).
                self._share(
                    CachedCompletion(
                        key=key,
                        anchor=anchor,
                        line_prefix=ctx.line_prefix,
                        text="",
                        created_at=time.time(),
                        origin="speculative" if speculative else "upstream",
                    )
                )
                return
            entry = pipeline.store.put(
                key,
                anchor,
                ctx.line_prefix,
                stream.text,
                context=ctx.line_context,
                origin="speculative" if speculative else "upstream",
            )
            if entry is not None:
                self._share(entry)

        pipeline.stats.upstream_requests += 1
        if speculative:
            pipeline.stats.speculative_requests += 1
        return inflight.start(
            predicted=predicted,
            uri=uri,
            anchor=anchor,
            line_prefix=ctx.line_prefix,
            open_stream=lambda: timed_stream(backend, request, pipeline.metrics, clock),
            on_complete=on_complete,
        )

    async def wait(self, stream: InflightStream) -> str | None:
        """The text of ``stream``; None when it failed or was cancelled under us."""
        try:
            text = await self._pipeline.inflight.wait(stream)
        except AuthError as exc:
            # No token: completions pause (empty answers) until one can be had.
            self._pipeline.stats.upstream_errors += 1
            self.notifier.problem("auth", f"completions paused, no access token: {exc}")
            return None
        except TransportError as exc:
            self._pipeline.stats.upstream_errors += 1
            self.notifier.problem("upstream", f"completion service failed: {exc}")
            return None
        except asyncio.CancelledError:
            if stream.task is not None and stream.task.cancelled():
                # The stream was cancelled under us (the user diverged): no answer.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
                return None
            raise
        self.notifier.resolved("auth", "access token obtained, completions resumed")
        self.notifier.resolved("upstream", "completion service is answering again")
        return text

    async def flush(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for answers still being written to L2 (shutdown)."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout)

    def _share(self, entry: CachedCompletion) -> None:
        l2 = self._pipeline.l2
        if l2 is None:
            return
        task = asyncio.ensure_future(l2.put(entry))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
