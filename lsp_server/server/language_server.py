"""The scopecache language server: its state, its settings and its lifecycle.

``ScopecacheServer`` owns the documents, the settings, the caches, the
completion backend and the stats, and rebuilds only the parts whose settings
changed. The LSP handlers (``lsp_server.server.handlers``) are thin: they translate
LSP messages into calls on this object or on the feature modules that work
on it (``lsp_server.server.suggestions``, ``lsp_server.server.l2_link``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Mapping
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cache.heat import ContextHeat
from cache.l2.kept_file import KeptFile, kept_path
from cache.store import CompletionStore
from lsp_server.completion.gate import (
    BarSource,
    Surroundings,
    Verdict,
    configured_bar,
    fixed_bar,
)
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.kept_bar import KeptRecord, LocalKept
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline, SharedTier, Suggestion
from lsp_server.completion.speculate import SpeculativePrefetcher
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.cross_file import CrossFileContext, prompt_context
from lsp_server.documents.document import Document
from lsp_server.documents.positions import PositionLike
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, completion_context
from lsp_server.observe.collector import CollectorPauses
from lsp_server.observe.endpoint import MetricsEndpoint
from lsp_server.observe.hints import DEFAULT_WINDOW as HINT_WINDOW
from lsp_server.observe.hints import diagnose, signal_values
from lsp_server.observe.metrics import MetricsRegistry, pool_state
from lsp_server.observe.stats import ServerStats
from lsp_server.server import assembly
from lsp_server.server.accepts import AcceptWatch
from lsp_server.server.discovery import LocalDiscovery
from lsp_server.server.endpoint_retry import EndpointRetry
from lsp_server.server.first_use import rehearse_exclusion, rehearse_protocol
from lsp_server.server.heap import settle_heap
from lsp_server.server.l2_link import L2Link
from lsp_server.server.protocol import ScopecacheProtocol
from lsp_server.server.recorder import TraceRecorder
from lsp_server.server.served import ServedItems
from lsp_server.server.settings_codec import parse_settings
from lsp_server.settings import Settings
from transport.backend import CompletionBackend
from transport.cost import REMOTE_SERVICE, ServiceCost
from transport.errors import TransportError

logger = logging.getLogger(__name__)

__version__ = "0.1.0"


#: how long shutdown waits for answers still being written to L2
L2_FLUSH_SECONDS = 2.0


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)


def metrics_port_problem(host: str, port: int, exc: OSError) -> str:
    """What to tell the user when the metrics endpoint cannot listen, and what to change."""
    message = f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
    if exc.errno != errno.EADDRINUSE:
        return message
    return (
        f"{message} - probably another editor window: its numbers are at "
        f"http://{host}:{port}/; set metricsPort to another port (0: off) for this "
        "window's, and the shared L2's stats (l2 in scopecache/stats) count what all "
        "windows store"
    )


class ScopecacheServer(LanguageServer):
    """A pygls language server answering completions from a scope-keyed cache."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        backend: CompletionBackend | None = None,
        store: CompletionStore | None = None,
        l2: SharedTier | None = None,
    ) -> None:
        super().__init__("scopecache", __version__, protocol_cls=ScopecacheProtocol)
        self.base_settings = settings or Settings()
        self.settings = self.base_settings
        self.stats = ServerStats()
        self.metrics = MetricsRegistry()
        #: the cycle collector's full passes, timed from the end of start-up to shutdown
        self.collector = CollectorPauses()
        #: set by ``scopecache serve``: the process is the server's own, so its
        #: start-up objects are frozen out of the collector's passes
        #: (``lsp_server.server.heap``); a host that embeds the server leaves it off
        self.owns_process = False
        self._end_of_start_up: asyncio.Handle | None = None
        self.metrics_endpoint: MetricsEndpoint | None = None
        self.notifier = UserNotifier(self.window_show_message)
        self.documents = DocumentStore(max_parse_bytes=self.settings.max_parse_bytes)
        self.cross_file = CrossFileContext(
            self.documents, lambda: self.settings, root=self._workspace_root
        )
        self.inflight = InflightRegistry(cost=self._service_cost)
        self.throttle = MissThrottle(pacing=self._pacing)
        self.speculator = SpeculativePrefetcher(self.settings.speculative)
        self.recorder: TraceRecorder | None = None
        #: the process's exit code once ``start_io``/``start_tcp`` return (LSP: 1 after
        #: an ``exit`` that no ``shutdown`` came before)
        self.exit_code = 0
        self._host_backend = backend
        self._host_store = store
        self._host_l2 = l2
        self.backend: CompletionBackend | None = None
        self.heat = ContextHeat()
        self.store: CompletionStore = (
            store if store is not None else assembly.build_store(self.settings, self.heat)
        )
        self.l2: SharedTier | None = l2
        self.l2_link = L2Link(
            notifier=self.notifier,
            spawn=self.spawn,
            l1=lambda: self.store,
            prewarm_limit=lambda: self.settings.cache.prewarm,
        )
        self._signatures: dict[str, tuple[Any, ...]] = {}
        #: every problem of the settings last received, for ``scopecache/health``
        self.settings_problems: list[str] = []
        self.endpoint_retry = EndpointRetry()
        #: with no endpoint set, the local completion server found on loopback
        self.discovery = LocalDiscovery(on_change=lambda: self.apply(self.settings))
        self.discovery.allowed = backend is None
        self.served = ServedItems()
        #: suggestions shown and accepted, and what became of the accepted text
        self.accepts = AcceptWatch(self.documents, self.settings.acceptance)
        #: what this developer kept, moving the bar to show and the pacing (local only)
        self.kept = LocalKept(KeptRecord(self.accepts.ledger), None)
        self._tasks: set[asyncio.Task[Any]] = set()
        #: the event loop serving the client, known from ``initialize`` on (work
        #: on other threads hands it what must go over the protocol)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pipeline = self._make_pipeline()

    # -- settings ---------------------------------------------------------

    def configure(self, data: Mapping[str, Any] | None, *, base: Settings | None = None) -> None:
        """Apply settings from the client; tell the user once about bad keys."""
        settings, problems = parse_settings(data, base or self.base_settings)
        self.settings_problems = problems
        if problems:
            self.notifier.problem("settings", "invalid settings ignored: " + "; ".join(problems))
        else:
            self.notifier.resolved("settings")
        self.apply(settings)

    def apply(self, settings: Settings) -> None:
        """Switch to ``settings``, rebuilding only the parts whose settings changed."""
        self.settings = settings
        self.documents.max_parse_bytes = settings.max_parse_bytes
        t = settings.throttle
        self.throttle.min_delay = t.min_delay_ms / 1000.0
        self.throttle.max_delay = t.max_delay_ms / 1000.0
        self.throttle.line_start_immediate = t.line_start_immediate
        self.throttle.first_word_waits = t.first_word_waits
        self.throttle.max_pause = t.max_pause_ms / 1000.0
        self.speculator.settings = settings.speculative
        self.accepts.configure(settings.acceptance)
        if settings.record_trace and self.recorder is None:
            self.recorder = TraceRecorder(
                settings.record_trace, include_text=settings.record_text, exclude=settings.exclude
            )
        if self.recorder is not None:
            self.recorder.acceptance_windows = self.accepts.ledger.windows
        # With no endpoint set, the server discovery found (if any) is the endpoint.
        self.discovery.configure(settings)
        settings = self.discovery.resolve(settings)
        # L1 entries carry no endpoint/model/tenant: a new namespace starts empty,
        # so an answer of one model is never served under another.
        namespace_changed = self._changed("namespace", (assembly.cache_namespace(settings),))
        store_changed = self._changed("store", assembly.store_signature(settings))
        if self._host_store is None and (store_changed or namespace_changed):
            self.store = assembly.build_store(settings, self.heat)
        elif namespace_changed:
            self.store.clear()
        if self._host_backend is not None:
            self.backend = self._host_backend
        elif self._changed("backend", assembly.backend_signature(settings)):
            self._replace_backend(settings)
        elif self.backend is None and self.endpoint_retry.problem is not None:
            # The same settings again: what was wrong (a missing CA file) may be fixed now.
            self._replace_backend(settings)
        if self._host_l2 is None and self._changed("l2", assembly.l2_signature(settings)):
            self.l2 = self.l2_link.replace(settings, started=self._initialized)
        if self._initialized:
            self._sync_metrics_endpoint(settings)
        old = self.pipeline
        self.pipeline = self._make_pipeline()
        if old.backend is not self.backend:
            old.stop()  # its prefetches would ask through a closed backend

    def _changed(self, part: str, signature: tuple[Any, ...]) -> bool:
        if self._signatures.get(part) == signature:
            return False
        self._signatures[part] = signature
        return True

    def _replace_backend(self, settings: Settings) -> None:
        old, self.backend = self.backend, None
        if old is not None:
            self.inflight.cancel_all()
            self.spawn(old.aclose())
        try:
            self.backend = assembly.build_backend(settings)
        except TransportError as exc:
            self._backend_failed(exc)
            return
        self._backend_ready()

    def _backend_failed(self, exc: TransportError) -> None:
        self.endpoint_retry.failed(str(exc))
        self.notifier.problem("endpoint", f"cannot use endpoint: {exc}", types.MessageType.Error)

    def _backend_ready(self) -> None:
        self.endpoint_retry.succeeded()
        self.notifier.resolved("endpoint", "endpoint settings work now, completions are on")
        if self.backend is not None and self._initialized:
            self.spawn(self._warm_up(self.backend))

    def retry_configuration(self) -> None:
        """On a request: re-check an unusable endpoint configuration once its back-off passed."""
        if self.backend is None and self._host_backend is None and self.endpoint_retry.due():
            self.spawn(self.rebuild_backend())

    async def rebuild_backend(self) -> bool:
        """Try again to build the backend that failed; True when there is one now.

        The build reads the CA file, so it runs off the event loop.
        """
        if self.backend is not None or self.endpoint_retry.problem is None:
            return self.backend is not None
        settings = self.discovery.resolve(self.settings)
        signature = self._signatures.get("backend")
        self.endpoint_retry.begin()
        try:
            backend = await asyncio.to_thread(assembly.build_backend, settings)
        except TransportError as exc:
            self._backend_failed(exc)
            return False
        if self._signatures.get("backend") != signature or self.backend is not None:
            # Other endpoint settings arrived meanwhile and were applied on their own.
            if backend is not None:
                await backend.aclose()
            return self.backend is not None
        self.backend = backend
        self._backend_ready()
        self.pipeline = self._make_pipeline()
        logger.info("endpoint configuration usable after a retry")
        return self.backend is not None

    @property
    def _initialized(self) -> bool:
        return getattr(self, "_started", False)

    def _make_pipeline(self) -> CompletionPipeline:
        return CompletionPipeline(
            store=self.store,
            backend=self.backend,
            stats=self.stats,
            throttle=self.throttle,
            inflight=self.inflight,
            notifier=self.notifier,
            completion=self.settings.completion,
            l2=self.l2,
            metrics=self.metrics,
            prompt_context=lambda uri: prompt_context(self.cross_file, self.documents, uri),
            source_muted=self.accepts.ledger.muted,
            on_answer=self._record_answer,
            show_bar=self._show_bar(),
        )

    def _show_bar(self) -> BarSource | None:
        """The configured bar, moved by what the developer kept (``acceptance.learnBar``)."""
        if not self.settings.acceptance.learn_bar:
            return None
        return self.kept.record.bar(fixed_bar(configured_bar(self.settings.completion)))

    def _pacing(self, uri: str) -> float:
        """How many times its usual wait a miss in ``uri`` waits (what was kept there)."""
        doc = self.documents.get(uri)
        if doc is None or not self.settings.acceptance.learn_bar:
            return 1.0
        return self.kept.record.pacing(doc.language)

    def _record_answer(
        self, uri: str, ctx: SyntaxContext, found: Suggestion, around: Surroundings,
        verdict: Verdict,
    ) -> None:  # fmt: skip
        """Keep a judged answer in the trace's side record while recording."""
        if self.recorder is not None:
            self.recorder.answer(uri, ctx, found, around, verdict)

    def _workspace_root(self) -> str | None:
        try:
            root = self.workspace.root_uri
        except Exception:  # no workspace before initialize
            return None
        return root if isinstance(root, str) else None

    # -- lifecycle --------------------------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio with the hardened reader of ``lsp_server.server.framing``."""
        from lsp_server.server.framing import serve_stdio

        self.exit_code = serve_stdio(self, stdin, stdout)

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one TCP client with the hardened reader of ``lsp_server.server.framing``."""
        from lsp_server.server.framing import serve_tcp

        self.exit_code = serve_tcp(self, host, port)

    def start_background(self) -> None:
        """Warm up after ``initialized``: DNS, connections, tokens."""
        self._started = True
        if self.backend is not None:
            self.spawn(self._warm_up(self.backend))
        self.discovery.start()
        self.l2_link.start()
        cache = self.settings.cache
        path = kept_path(cache.l2, cache.sqlite_path)
        self.kept.file = KeptFile(path) if path is not None else None
        self.kept.start()
        self._sync_metrics_endpoint(self.settings)
        # CPU work, queued behind the warm-ups' first steps (they wait on I/O).
        self._end_of_start_up = asyncio.get_running_loop().call_soon(self._finish_start_up)

    def _finish_start_up(self) -> None:
        """Pay one-time costs now rather than on the first completion (``first_use``).

        Then settle the heap if the process is ours (``heap``) and start
        timing the collector's full passes.
        """
        if isinstance(self.protocol, ScopecacheProtocol):
            rehearse_protocol(self.protocol)
        rehearse_exclusion(self.settings.exclude)
        if self.owns_process:
            settle_heap()
        self.collector.install()

    def _sync_metrics_endpoint(self, settings: Settings) -> None:
        signature = (settings.metrics_host, settings.metrics_port)
        # The same settings again after a failure (port in use): the port may be free now.
        failed = "metrics" in self.notifier.active() and self.metrics_endpoint is None
        if self._changed("metrics", signature) or failed:
            self.spawn(self._serve_metrics(*signature))

    async def _serve_metrics(self, host: str, port: int) -> None:
        """(Re)start the /metrics + dashboard endpoint; port 0 turns it off."""
        old, self.metrics_endpoint = self.metrics_endpoint, None
        if old is not None:
            await old.aclose()
        if port == 0:
            return
        endpoint = MetricsEndpoint(
            self.stats_snapshot, self.metrics, host=host, port=port, sample=self.stats_snapshot
        )
        try:
            await endpoint.start()
        except OSError as exc:
            self.notifier.problem("metrics", metrics_port_problem(host, port, exc))
            return
        self.notifier.resolved("metrics")
        self.metrics_endpoint = endpoint

    async def _warm_up(self, backend: CompletionBackend) -> None:
        try:
            await backend.start()
        except TransportError as exc:
            self.notifier.problem("upstream", f"completion service not reachable yet: {exc}")
        except Exception:
            logger.exception("warm-up failed")

    async def close(self) -> None:
        """Cancel streams and release connections (shutdown)."""
        self.pipeline.stop()
        self.inflight.cancel_all()
        self.accepts.close()
        if self._end_of_start_up is not None:
            self._end_of_start_up.cancel()
        self.collector.uninstall()
        await self.discovery.aclose()
        if self.backend is not None:
            await self.backend.aclose()
        # Answers fetched just before the editor closed are still on their way
        # to L2: let them land, or the next window asks for them again.
        await self.pipeline.upstream.flush(L2_FLUSH_SECONDS)
        await self.l2_link.aclose()
        await self.kept.aclose()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.aclose()
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            await asyncio.get_running_loop().run_in_executor(None, recorder.finish)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, keeping a reference until it ends."""
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- completions ------------------------------------------------------

    def doc_context(self, doc: Document, position: PositionLike) -> SyntaxContext:
        """The syntax context of ``doc`` at ``position`` with the configured windows."""
        return completion_context(doc, position, self.settings.completion)

    def _service_cost(self) -> ServiceCost:
        """The cost model of the service in use (``transport.cost``)."""
        return self.backend.cost() if self.backend is not None else REMOTE_SERVICE

    def stats_snapshot(self) -> dict[str, Any]:
        """The ``scopecache/stats`` answer: the counters with every part's state.

        ``ServerStats`` joined with the L1 store (policy, capacity, size), the
        backend's transport counters, the L2 store, the in-flight streams, the
        open documents, the problems the user was told about, the connection
        pool, the metrics registry and the hints derived from its recent
        samples. The metrics endpoint serves and samples the same answer.
        """
        snapshot = self.stats.snapshot()
        snapshot["cache"] = {
            **self.store.policy_stats(),
            "policy": self.store.policy_name,
            "capacity": self.store.capacity,
            "size": len(self.store),
        }
        counters = self.backend.counters() if self.backend is not None else None
        snapshot["transport"] = {
            "dnsLookups": counters.dns_lookups if counters else 0,
            "connectionsOpened": counters.connections_opened if counters else 0,
            "requests": counters.requests if counters else 0,
            "retries": counters.retries if counters else 0,
            "errorsByKind": dict(counters.errors_by_kind) if counters else {},
            "circuit": counters.circuit if counters else "closed",
            "endpoint": self.discovery.resolve(self.settings).endpoint,
            "dnsFallbacks": counters.dns_fallbacks if counters else 0,
            "streamsReset": counters.streams_reset if counters else 0,
            "ttftMsP50": counters.ttft_ms_p50 if counters else 0.0,
            "ttftMsP95": counters.ttft_ms_p95 if counters else 0.0,
            "protocol": counters.protocol if counters else "",
            "connectionsReused": counters.connections_reused if counters else 0,
            "connectionsClosedByCancel": counters.connections_closed_by_cancel if counters else 0,
            "connectionsClosedByServer": counters.connections_closed_by_server if counters else 0,
            "connectionsRetired": counters.connections_retired if counters else 0,
            "connectWaits": counters.connect_waits if counters else 0,
            "connectionsReady": counters.connections_ready if counters else 0,
        }
        snapshot["endpoint"] = self.discovery.snapshot(self.settings)
        snapshot["provider"] = (
            self.backend.service() if self.backend is not None else {}
        ) or {"configured": self.settings.provider, "detected": None, "path": None}
        snapshot["tokens"] = {
            "prompt": counters.prompt_tokens if counters else 0,
            "evaluated": counters.evaluated_tokens if counters else 0,
            "cached": counters.cached_tokens if counters else 0,
            "generated": counters.generated_tokens if counters else 0,
            "answers": counters.usage_reports if counters else 0,
        }
        if self.l2_link.store is not None:
            snapshot["l2"] = self.l2_link.store.stats()
        snapshot["inflight"] = len(self.inflight)
        snapshot["upstreamCancelled"] = self.inflight.cancelled_upstream
        snapshot["upstreamCancelledBy"] = dict(self.inflight.cancelled_by)
        snapshot["upstreamCompleted"] = self.inflight.completed_upstream
        snapshot["wastedChars"] = self.inflight.wasted_chars
        snapshot["pacing"] = {
            "slowService": self.throttle.slow,
            "answerMs": _ms(self.throttle.answer),
            "typingGapMs": _ms(self.throttle.typing),
            "doomed": self.inflight.doomed_upstream,
            "waitedTurn": self.pipeline.turns.waited,
            "superseded": self.pipeline.turns.superseded,
        }
        snapshot["documents"] = len(self.documents)
        snapshot["languages"] = self.language_stats()
        snapshot["acceptance"] = self.accepts.ledger.snapshot()
        snapshot["problems"] = self.notifier.active()
        snapshot["pool"] = pool_state(self.backend, self.settings.transport.max_connections)
        snapshot["metrics"] = self.metrics.snapshot()
        snapshot["gc"] = self.collector.snapshot()
        if self.metrics.sample_due():
            self.metrics.add_sample(signal_values(snapshot))
        snapshot["hints"] = diagnose(self.metrics.window(HINT_WINDOW))
        if self.metrics_endpoint is not None:
            snapshot["metricsUrl"] = self.metrics_endpoint.url
        return snapshot

    def language_stats(self) -> dict[str, dict[str, int]]:
        """Per language: open documents, requests, and open documents parsed vs text-only."""
        out: dict[str, dict[str, int]] = {}

        def entry(language: str) -> dict[str, int]:
            return out.setdefault(language, {"documents": 0, "requests": 0, "parsed": 0, "text": 0})

        for doc in self.documents:
            row = entry(doc.language)
            row["documents"] += 1
            row["parsed" if doc.tree is not None else "text"] += 1
        for language, count in self.stats.requests_by_language.items():
            entry(language)["requests"] = count
        return dict(sorted(out.items()))
