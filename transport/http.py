"""``HttpCompletionBackend``: the completion backend that speaks HTTP to a service.

``start()`` resolves the endpoint's host (DNS prefetch), opens the
connection with one cheap GET (pre-connect) and obtains credentials, so the
first completion rides an open, resolved, authenticated connection.
``stream()`` POSTs one completion through the provider's wire format and
yields text chunks; closing the iterator early (or cancelling the task that
iterates it) closes the response, which resets the HTTP/2 stream
(RST_STREAM) and keeps the connection for the next request.

With ``provider = "auto"`` (and for ``llamacpp``, whose limits it learns)
``start()`` identifies the service once (``transport.service_detect``) on
the connection it opens anyway, and switches to that service's best
fill-in-the-middle path; the choice is logged once. A service that could not
be reached is asked again, at most every ``REDETECT_SECONDS``, by the next
completion; until then the OpenAI path is used.

Retries, the circuit breaker and Retry-After follow ``transport.resilience``.
Every failure leaves as a ``transport.errors.TransportError`` before the
stream finishes, so a caller that stores only completed streams never
caches a failed or truncated answer. A changed endpoint means a new backend
(the language server builds one per endpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import httpcore
import httpx

from transport import errors
from transport.auth.kinds import auth_for
from transport.auth.provider import AuthProvider
from transport.backend import (
    CUT_AT_LENGTH,
    CompletionBackend,
    CompletionRequest,
    TransportCounters,
)
from transport.cost import ServiceCost
from transport.dns import DnsPrefetcher
from transport.network import PinnedResolverBackend, is_ip_literal, tls_context
from transport.options import EndpointOptions
from transport.pool import ConnectionWarmer, PinnedTransport
from transport.providers import (
    LlamaCppProvider,
    TokenUsage,
    decode_lines,
    parse_json,
    provider_for,
)
from transport.resilience import Backoff, CircuitBreaker, SecretRedactor
from transport.response import drain, is_json, raise_for_status, read_body
from transport.service_detect import ServiceProfile, detect_service

logger = logging.getLogger(__name__)

USER_AGENT = "scopecache/0.1"
#: an answer must finish within this many read timeouts, however it trickles
DEADLINE_READ_TIMEOUTS = 2.0
#: a service that was down at identification is asked again after this long
REDETECT_SECONDS = 5.0

Sleep = Callable[[float], Awaitable[None]]


def _origin(options: EndpointOptions) -> httpcore.Origin:
    scheme = options.endpoint.split(":", 1)[0]
    return httpcore.Origin(scheme.encode(), options.host.encode("idna"), options.port)


class HttpCompletionBackend(CompletionBackend):
    """A ``CompletionBackend`` over one shared, pre-connected HTTP/2 pool per endpoint."""

    def __init__(
        self,
        options: EndpointOptions,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: DnsPrefetcher | None = None,
        clock: Callable[[], float] = time.monotonic,
        auth: AuthProvider | None = None,
        rng: Callable[[], float] = random.random,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        options.validate()
        self.options = options
        self._provider = provider_for(options)
        #: ``aclose`` ran: a request that waited through it is not sent
        self._closed = False
        self._provider.on_usage = self._count_usage
        #: what identification learnt (None: not identified, or not asked)
        self.profile: ServiceProfile | None = None
        self._identify = options.provider in ("auto", "llamacpp")
        self._identify_after = float("-inf")
        self._identifying: asyncio.Future[None] | None = None
        #: the credentials' start: identification waits for it (a service that
        #: wants a key would count key-less questions as failed logins)
        self._authing: asyncio.Future[None] | None = None
        self._dns = resolver if resolver is not None else DnsPrefetcher(options.nameservers)
        self._network: PinnedResolverBackend | None = None
        if transport is None:
            self._network = PinnedResolverBackend(self._dns)
            http1, http2 = options.protocols
            transport = PinnedTransport(
                backend=self._network,
                ssl_context=tls_context(
                    ca_file=options.ca_file, verify=options.verify_tls, http1=http1, http2=http2
                ),
                http1=http1,
                http2=http2,
                max_connections=options.max_connections,
                max_keepalive=options.max_keepalive,
                keepalive_expiry=options.keepalive_expiry,
                origin=_origin(options),
                connect_timeout=options.connect_timeout,
            )
        self.transport = transport
        self._client = httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(
                connect=options.connect_timeout,
                read=options.read_timeout,
                write=options.write_timeout,
                pool=options.pool_timeout,
            ),
            headers={"User-Agent": USER_AGENT},
            trust_env=False,
        )
        self._auth = auth if auth is not None else auth_for(options)
        self._clock = clock
        self._sleep = sleep
        self._backoff = Backoff(rng=rng)
        self.breaker = CircuitBreaker(
            threshold=options.breaker_threshold,
            cooldown=options.breaker_cooldown,
            clock=clock,
            backoff=Backoff(options.breaker_cooldown, options.breaker_cooldown * 16, rng=rng),
        )
        self._warmer = ConnectionWarmer(
            self._client,
            self._provider.probe_url,
            keep_warm_seconds=options.keep_warm_seconds,
            clock=clock,
        )
        self._counters = TransportCounters()
        self._ttft_ms: deque[float] = deque(maxlen=256)
        self._redactor = SecretRedactor(self._auth.secrets)
        #: the pre-connect while it runs: a request arriving meanwhile waits for
        #: it instead of opening a second connection
        self._warming: asyncio.Future[None] | None = None

    async def start(self) -> None:
        """DNS prefetch, credentials and pre-connect; failures are logged, not raised."""
        for handler in logging.getLogger().handlers:
            handler.addFilter(self._redactor)
        # The token fetch and the connection set-up run side by side.
        self._authing = asyncio.ensure_future(self._start_auth())
        self._warming = asyncio.ensure_future(self._start_network())
        await asyncio.gather(self._authing, self._warming)

    async def _start_auth(self) -> None:
        try:
            await self._auth.start()
        except errors.TransportError as exc:
            logger.warning("could not obtain credentials: %s", exc)

    async def _start_network(self) -> None:
        host = self.options.host
        if not is_ip_literal(host):
            try:
                await self._dns.prefetch(host)
            except errors.DNSError as exc:
                logger.warning("DNS prefetch failed: %s", exc)
        if self._identify:
            await self._identify_service()
        else:
            await self._warmer.preconnect()
        if isinstance(self.transport, PinnedTransport):
            self.transport.prepare()
        self._warmer.start()

    async def _identify_service(self) -> None:
        """Ask the service what it is (this opens the connection too) and pick its path."""
        if self._authing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._authing)
        headers: dict[str, str] = {}
        with contextlib.suppress(errors.TransportError):
            headers = await self._auth.header()
        profile = await detect_service(self._client, self.options, headers)
        if profile is None:
            self._identify_after = self._clock() + REDETECT_SECONDS
            if self.options.provider == "auto":
                logger.warning(
                    "could not identify the completion service at %s; using the OpenAI path "
                    "until it answers (set provider to pin one)", self.options.origin)
            return
        self._identify = False
        if self.options.provider == "llamacpp" and profile.kind != "llamacpp":
            # Pinned: keep the configured path, learn no limits from another kind of server.
            logger.info("provider llamacpp is pinned; %s does not look like llama.cpp (%s)",
                        self.options.origin, profile.kind)
            return
        self.profile = profile
        self._provider = provider_for(self.options, profile)
        self._provider.on_usage = self._count_usage
        self._warmer.probe_url = self._provider.probe_url
        if self.options.provider == "auto":
            template = f", FIM template {profile.fim_template}" if profile.fim_template else ""
            logger.info("completion service at %s is %s: using %s%s",
                        self.options.origin, profile.kind, profile.path, template)

    async def _identify_again(self) -> None:
        if not self._identify or self._clock() < self._identify_after:
            return
        if self._identifying is None or self._identifying.done():
            self._identifying = asyncio.ensure_future(self._identify_service())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._identifying), self.options.connect_timeout)

    def _count_usage(self, usage: TokenUsage) -> None:
        self._counters.usage_reports += 1
        self._counters.prompt_tokens += usage.prompt
        self._counters.evaluated_tokens += usage.evaluated
        self._counters.cached_tokens += usage.cached
        self._counters.generated_tokens += usage.generated

    def service(self) -> dict[str, Any]:
        """``configured`` provider, ``detected`` service and the completion ``path``."""
        answer: dict[str, Any] = {"configured": self.options.provider}
        if self.profile is not None:
            answer.update(self.profile.to_json())
        else:
            answer["detected"] = None
        if "path" not in answer or self.profile is None or self.profile.kind != self._provider.name:
            url, _ = self._provider.build_request(CompletionRequest(prefix="", suffix=""))
            answer["path"] = httpx.URL(url).path
        if isinstance(self._provider, LlamaCppProvider):
            answer["promptTokenLimit"] = self._provider.prompt_token_limit()
            answer["promptsCutByServer"] = self._provider.prompts_cut
        return answer

    def prompt_prefix_chars(self) -> int | None:
        """The provider's prefix budget: the settings', or llama.cpp's share of its token limit."""
        return self._provider.prefix_budget()

    def cost(self) -> ServiceCost:
        """The identified service's cost model, else the configured provider's."""
        kind = self.profile.kind if self.profile is not None else self.options.provider
        return ServiceCost.for_kind(kind)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Stream the completion's text; see the module docstring for retries and errors."""
        self._warmer.touch()
        warming = self._warming
        if warming is not None and not warming.done():
            # Ride the connection being opened rather than racing it with another.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(warming), self.options.connect_timeout)
        elif self._identify:
            await self._identify_again()
        outcome = "abandoned"
        try:
            self.breaker.before_request()
            url, body = self._provider.build_request(request)
            attempt = 0
            while True:
                produced = False
                headers: dict[str, str] = {}
                try:
                    headers = await self._auth.header()
                    if self._closed:  # closed while this request waited for its connection
                        raise errors.BackendClosed(f"{request.request_id}: the backend is closed")
                    attempt_chunks = self._attempt(url, body, headers)
                    async with contextlib.aclosing(attempt_chunks) as chunks:
                        async for chunk in chunks:
                            produced = True
                            yield chunk
                    break
                except errors.TransportError as exc:
                    plain = None if produced else self._without_probabilities(exc, body)
                    if plain is not None:
                        body = plain
                        continue
                    delay = await self._retry_delay(exc, attempt, produced, headers)
                    if delay is None:
                        raise
                    attempt += 1
                    self._counters.retries += 1
                    logger.info("retrying %s after %s (%.2fs)", request.request_id, exc.kind, delay)
                    await self._sleep(delay)
            outcome = "ok"
            self.breaker.record_success()
        except errors.TransportError as exc:
            outcome = "error"
            self.breaker.record_failure(exc)
            self._counters.errors += 1
            by_kind = self._counters.errors_by_kind
            by_kind[exc.kind] = by_kind.get(exc.kind, 0) + 1
            raise
        finally:
            if outcome == "abandoned":
                self._counters.cancelled += 1
                self.breaker.record_abandoned()

    def _without_probabilities(
        self, exc: errors.TransportError, body: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The body to ask again with when the service refused token probabilities.

        A client error (400, 422) to a body that asked for probabilities is
        taken as the service not knowing the field: the same request goes
        again at once without it, and no later request asks (the answers are
        shown as a service without probabilities would have them shown).
        """
        if not isinstance(exc, errors.UpstreamStatusError) or exc.status not in (400, 422):
            return None
        plain = self._provider.drop_probabilities(body)
        if plain is not None:
            logger.warning(
                "%s refused token probabilities (HTTP %d): asking without them from now on; "
                "set completion.confidence to false to stop asking",
                self._provider.name, exc.status,
            )
        return plain

    async def _retry_delay(
        self, exc: errors.TransportError, attempt: int, produced: bool, headers: dict[str, str]
    ) -> float | None:
        """Seconds to wait before the one retry this failure earns, or None."""
        if attempt > 0 or produced:
            return None
        if isinstance(exc, errors.ConnectError):  # not TLSError, a sibling: it would fail again
            return self._backoff.delay(attempt)
        if isinstance(exc, errors.RateLimited) and exc.retry_after is not None:
            if exc.retry_after <= self.options.max_retry_wait:
                return exc.retry_after
            return None
        if isinstance(exc, errors.AuthRejected) and await self._auth.on_rejected(headers):
            return 0.0
        return None

    async def _attempt(
        self, url: str, body: dict[str, Any], headers: dict[str, str]
    ) -> AsyncGenerator[str, None]:
        """One upstream request with ``headers``; yields text, raises ``TransportError``."""
        self._counters.requests += 1
        started = self._clock()
        deadline = started + self.options.read_timeout * DEADLINE_READ_TIMEOUTS
        total = 0
        first = True
        try:
            async with self._client.stream("POST", url, json=body, headers=headers) as response:
                raise_for_status(response)
                raw = response.aiter_raw()
                provider = self._provider

                def observe(usage: TokenUsage) -> None:
                    provider.observe(body, usage)

                if is_json(response):
                    answer = parse_json(await read_body(raw))
                    text = provider.parse_body(answer, observe)
                    self._check_size(len(text))
                    if text:
                        yield text
                    if provider.body_cut(answer):
                        yield CUT_AT_LENGTH
                    return
                lines = decode_lines(self._until(raw, deadline))
                async with contextlib.aclosing(provider.parse_stream(lines, observe)) as texts:
                    async for text in texts:
                        total += len(text)
                        self._check_size(total)
                        if first and text:
                            self._ttft_ms.append((self._clock() - started) * 1000)
                            first = False
                        yield text
                await drain(raw)
        except httpx.HTTPError as exc:
            # httpx's own failures (our transport maps the network ones).
            raise errors.UpstreamProtocolError(f"HTTP error: {type(exc).__name__}") from exc

    async def _until(self, chunks: AsyncIterator[bytes], deadline: float) -> AsyncIterator[bytes]:
        async for chunk in chunks:
            if self._clock() > deadline:
                raise errors.UpstreamTimeout("the answer did not finish in time")
            yield chunk

    def _check_size(self, total: int) -> None:
        if total > self.options.max_response_chars:
            raise errors.UpstreamProtocolError(
                f"answer longer than maxResponseChars ({self.options.max_response_chars})"
            )

    def counters(self) -> TransportCounters:
        """A snapshot of what the transport did."""
        snapshot = TransportCounters(**vars(self._counters))
        snapshot.errors_by_kind = dict(self._counters.errors_by_kind)
        snapshot.dns_lookups = self._dns.dns_lookups
        snapshot.dns_fallbacks = self._dns.fallbacks
        if self._network is not None:
            snapshot.connections_opened = self._network.connections_opened
        if isinstance(self.transport, PinnedTransport):
            snapshot.streams_reset = self.transport.streams_reset
            snapshot.protocol = self.transport.protocol
            pool = self.transport.http1
            if pool is not None:
                c = pool.counters
                snapshot.connections_reused = c.reused
                snapshot.connections_closed_by_cancel = c.closed_by_cancel
                snapshot.connections_closed_by_server = c.closed_by_server
                snapshot.connections_retired = c.retired
                snapshot.connect_waits = c.connect_waits
                snapshot.connections_ready = pool.ready()
        snapshot.circuit = self.breaker.state
        if self._ttft_ms:
            ordered = sorted(self._ttft_ms)
            snapshot.ttft_ms_p50 = ordered[len(ordered) // 2]
            snapshot.ttft_ms_p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        return snapshot

    async def aclose(self) -> None:
        """Stop background work and close every connection."""
        self._closed = True
        await self._warmer.aclose()
        await self._dns.aclose()
        await self._auth.aclose()
        await self._client.aclose()
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._redactor)

    def __repr__(self) -> str:
        return f"<HttpCompletionBackend {self.options.endpoint} {self.transport!r}>"
