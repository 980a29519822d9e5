"""``scopecache diagnose``, service layer, and the requests the encoding layer reads.

``ServiceProbe.prompt_tokens`` sends one non-streaming completion of the
sample and reads the tokens the service says it read (``usage.prompt_tokens``;
llama.cpp's ``tokens_evaluated``, Ollama's ``prompt_eval_count``); the
encoding layer (``encoding``) judges them.

Service: ``--samples`` streamed completions over one warm connection (the
connection set-up is the network layer's), timing the first text chunk
(TTFT) and the end of the answer; the decode rate counts chunks after the
first (services stream about one token per chunk). Where the service offers
``/chat/completions``, the same prompt goes through it too.

Requests go through the transport's own pool (``PinnedTransport``) pinned to
the address the network layer connected to, so a name only the configured
nameservers know still works; every failure is a ``transport.errors`` error.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from lsp_server.diagnose.errors import explain
from lsp_server.diagnose.report import Limit, Measurement, failing, info, judged, skipped
from lsp_server.diagnose.sample import PromptSample
from lsp_server.observe.stats import percentile
from transport import errors
from transport.backend import CompletionRequest
from transport.network import PinnedResolverBackend, tls_context
from transport.options import EndpointOptions
from transport.pool import PinnedTransport
from transport.prompt import fit_prompt
from transport.providers import (
    LlamaCppProvider,
    Provider,
    TokenUsage,
    decode_lines,
    provider_for,
    sse_events,
)
from transport.service_detect import ServiceProfile

Clock = Callable[[], float]

TTFT_P50_LIMIT = Limit(300.0, failing=2000.0)
TTFT_P95_LIMIT = Limit(600.0, failing=4000.0)
TOTAL_P95_LIMIT = Limit(1000.0)
RATE_LIMIT = Limit(30.0, unit="tok/s", higher_is_better=True)
CHAT_OVERHEAD_LIMIT = Limit(50.0)


class PinnedAddresses:
    """An address source that always answers with the given addresses."""

    def __init__(self, addresses: list[str]) -> None:
        self._addresses = addresses

    async def lookup(self, host: str) -> list[str]:
        """The pinned addresses, whatever the host."""
        return list(self._addresses)


def probe_client(options: EndpointOptions, backend: PinnedResolverBackend) -> ProbeClient:
    """An httpx client over one pinned connection, with the transport's TLS and timeouts."""
    http1, http2 = options.protocols
    transport = PinnedTransport(
        backend=backend,
        ssl_context=tls_context(
            ca_file=options.ca_file, verify=options.verify_tls, http1=http1, http2=http2
        ),
        http1=http1,
        http2=http2,
        max_connections=1,
        max_keepalive=1,
        keepalive_expiry=options.keepalive_expiry,
    )
    timeout = httpx.Timeout(
        connect=options.connect_timeout,
        read=options.read_timeout,
        write=options.write_timeout,
        pool=options.pool_timeout,
    )
    return ProbeClient(transport, timeout)


class ProbeClient(httpx.AsyncClient):
    """An httpx client that keeps its pinned transport at hand (to ask what it spoke)."""

    def __init__(self, transport: PinnedTransport, timeout: httpx.Timeout) -> None:
        super().__init__(transport=transport, timeout=timeout, trust_env=False)
        self.pinned = transport


def protocol_row(client: ProbeClient, options: EndpointOptions) -> Measurement:
    """What the probe's connection actually spoke (``http/1.1``, ``h2``, ``h2c``)."""
    spoken = client.pinned.protocol
    if not spoken:
        return skipped("protocol", "no request went through")
    hint = None
    if spoken == "http/1.1" and options.endpoint.startswith("http:"):
        hint = "plain http:// speaks HTTP/1.1 (transport.http2 = auto); h2c needs true"
    return info("protocol", spoken, hint=hint)


@dataclass(frozen=True)
class StreamTiming:
    """One streamed answer: seconds to the first text, to the end, and its chunks."""

    ttft: float
    total: float
    chunks: int


def p50_p95(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile."""
    return percentile(values, 50), percentile(values, 95)


def decode_rate(timings: list[StreamTiming]) -> float | None:
    """Chunks per second after the first chunk, over all samples; None if unmeasurable."""
    chunks = sum(t.chunks - 1 for t in timings if t.chunks > 1)
    seconds = sum(t.total - t.ttft for t in timings if t.chunks > 1)
    return chunks / seconds if chunks and seconds > 0 else None


def _usage_tokens(provider: str, body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    if provider == "llamacpp":
        value = body.get("tokens_evaluated")
    elif provider == "ollama":
        value = body.get("prompt_eval_count")
    else:
        usage = body.get("usage")
        value = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ServiceProbe:
    """Sends the diagnosis's own requests to the service over one warm connection."""

    def __init__(
        self,
        options: EndpointOptions,
        client: httpx.AsyncClient,
        headers: dict[str, str],
        *,
        clock: Clock = time.perf_counter,
        profile: ServiceProfile | None = None,
    ) -> None:
        self.options = options
        self._client = client
        self._headers = headers
        self._clock = clock
        self._provider = provider_for(options, profile)

    @property
    def provider(self) -> Provider:
        """The provider the probe's requests use."""
        return self._provider

    @property
    def provider_name(self) -> str:
        """The wire format in use: the configured one, or the detected one for ``auto``."""
        return self._provider.name

    def completion_body(self, sample: PromptSample, *, stream: bool) -> tuple[str, dict[str, Any]]:
        """URL and body of the provider's completion request for ``sample``."""
        url, body = self._provider.build_request(sample.request(self.options.max_tokens))
        body["stream"] = stream
        return url, body

    async def post_json(self, sample: PromptSample) -> Any:
        """The non-streamed answer's JSON for ``sample`` (None when it is not JSON)."""
        url, body = self.completion_body(sample, stream=False)
        response = await self._client.post(url, json=body, headers=self._headers)
        _raise_for_status(response, url)
        try:
            return response.json()
        except ValueError:
            return None

    async def prompt_tokens(self, sample: PromptSample) -> int | None:
        """Tokens the service says it read for ``sample`` (None: it does not report them)."""
        return _usage_tokens(self._provider.name, await self.post_json(sample))

    async def _timed(
        self, url: str, body: dict[str, Any], texts: Callable[[httpx.Response], AsyncIterator[str]]
    ) -> StreamTiming:
        started = self._clock()
        first: float | None = None
        chunks = 0
        async with self._client.stream("POST", url, json=body, headers=self._headers) as response:
            _raise_for_status(response, url)
            async for text in texts(response):
                if text:
                    chunks += 1
                    if first is None:
                        first = self._clock()
        ended = self._clock()
        return StreamTiming((first or ended) - started, ended - started, chunks)

    async def stream_completion(self, sample: PromptSample) -> StreamTiming:
        """Time one streamed completion through the provider's endpoint."""
        url, body = self.completion_body(sample, stream=True)
        provider = self._provider

        def texts(response: httpx.Response) -> AsyncIterator[str]:
            return provider.parse_stream(decode_lines(response.aiter_bytes()))

        return await self._timed(url, body, texts)

    async def stream_chat(self, sample: PromptSample) -> StreamTiming:
        """Time the same prompt through ``{endpoint}/chat/completions``."""
        url = f"{self.options.base_url}/chat/completions"
        prefix, _ = fit_prompt(
            sample.prefix, sample.suffix, self.options.prefix_chars, self.options.suffix_chars
        )
        body = {
            "model": self.options.model,
            "messages": [
                {"role": "system", "content": "Continue the code. Answer with code only."},
                {"role": "user", "content": prefix},
            ],
            "max_tokens": self.options.max_tokens,
            "temperature": 0,
            "stream": True,
        }
        return await self._timed(url, body, _chat_texts)


async def _chat_texts(response: httpx.Response) -> AsyncIterator[str]:
    async for data in sse_events(decode_lines(response.aiter_bytes())):
        if data.strip() == "[DONE]":
            return
        with contextlib.suppress(ValueError, AttributeError, IndexError, TypeError):
            chunk = json.loads(data)
            delta = chunk["choices"][0].get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                yield content


def _raise_for_status(response: httpx.Response, url: str) -> None:
    if response.status_code < 400:
        return
    status = response.status_code
    if status in (401, 403):
        raise errors.AuthRejected(status, f"HTTP {status} from {url}")
    raise errors.UpstreamStatusError(status, f"HTTP {status} from {url}")


def service_measurements(
    options: EndpointOptions, profile: ServiceProfile | None
) -> list[Measurement]:
    """Which server was identified, the path used, and the prompt limit that applies."""
    if profile is None:
        return [info("server", "unidentified", hint=f"provider {options.provider}: the "
                     "service did not answer the identification; the OpenAI path is used")]
    provider = provider_for(options, profile)
    url, _ = provider.build_request(CompletionRequest(prefix="", suffix=""))
    template = f", FIM template {provider.fim_template}" if provider.fim_template else ""
    model = f", model {profile.model}" if profile.model else ""
    out = [info("server", profile.kind, hint=f"provider {options.provider}: POST "
                f"{httpx.URL(url).path}{template}{model}"
                + (f" (Server: {profile.server})" if profile.server else ""))]
    if isinstance(provider, LlamaCppProvider):
        limit = provider.prompt_token_limit()
        context = (f"the slot's context is {profile.context_tokens} tokens (/props)"
                   if profile.context_tokens else "/props gave no context size")
        out.append(info(
            "prompt limit", limit, "tokens",
            hint=f"{context}; /infill cuts prompts to the server's batch size (-b) without "
                 f"saying so, so prompts are kept within completion.maxPromptTokens "
                 f"({options.max_prompt_tokens}); at {provider.chars_per_token():.1f} "
                 "chars/token; raise both with llama-server -b N -c N"))
    else:
        out.append(skipped("prompt limit", f"{profile.kind} does not report one; prompts use "
                           "completion.prefixChars and suffixChars"))
    return out


def prompt_cut_measurement(probe: ServiceProbe, sample: PromptSample, tokens: int) -> Measurement:
    """Whether the server read the whole prompt (llama.cpp cuts it at its batch size)."""
    provider = probe.provider
    if not isinstance(provider, LlamaCppProvider):
        return skipped("prompt cut by server", f"{provider.name} reports no cut")
    _, body = probe.completion_body(sample, stream=False)
    provider.observe(body, TokenUsage(prompt=tokens))
    if provider.prompts_cut:
        limit = probe.options.max_prompt_tokens
        return Measurement(
            "prompt cut by server", tokens, "tokens", None, "slow",
            f"the server read {tokens} prompt tokens of about {provider.expected_tokens(body)} "
            f"sent: its batch size (-b) is below completion.maxPromptTokens ({limit}); "
            f"scopecache now keeps prompts within {provider.prompt_token_limit()} tokens, but "
            f"set completion.maxPromptTokens = {tokens} or start llama-server with -b {limit}")
    return info("prompt cut by server", "no", hint=f"the server read all {tokens} prompt tokens")


async def diagnose_service(
    probe: ServiceProbe, sample: PromptSample, samples: int
) -> tuple[list[Measurement], float]:
    """TTFT, total time and decode rate, and chat where offered; also the TTFT p50 (ms)."""
    timings = [await probe.stream_completion(sample) for _ in range(samples)]
    ttft50, ttft95 = p50_p95([t.ttft * 1000 for t in timings])
    _, total95 = p50_p95([t.total * 1000 for t in timings])
    total50 = percentile([t.total * 1000 for t in timings], 50)
    slow_ttft = (f"TTFT {ttft50:.0f} ms at batch 1: the service is overloaded or the model is "
                 "too large for interactive completion")
    out = [
        judged("ttft (p50)", ttft50, TTFT_P50_LIMIT, slow_ttft),
        judged("ttft (p95)", ttft95, TTFT_P95_LIMIT,
               f"one answer in twenty waits {ttft95:.0f} ms for its first token: the service "
               "queues requests (batching, or other users)"),
        info("total (p50)", total50, "ms"),
        judged("total (p95)", total95, TOTAL_P95_LIMIT,
               f"answers take {total95:.0f} ms: lower completion.maxTokens "
               f"({probe.options.max_tokens}) or use a faster model"),
    ]
    rate = decode_rate(timings)
    if rate is None:
        out.append(skipped("decode rate", "answers came in one chunk: no decode rate"))
    else:
        out.append(judged("decode rate", rate, RATE_LIMIT,
                          f"{rate:.0f} tokens/s: multi-line suggestions arrive late; the model "
                          "is too large for the hardware or the service is shared"))
    if not any(t.chunks for t in timings):
        out.append(Measurement("completion text", 0, "chunks", "> 0", "slow",
                               "every answer was empty, so TTFT is the time to the end of the "
                               "answer: check model and provider, or try --file with your code"))
    out += await _chat_side_by_side(probe, sample, samples, ttft50)
    return out, ttft50


async def _chat_side_by_side(
    probe: ServiceProbe, sample: PromptSample, samples: int, ttft50: float
) -> list[Measurement]:
    if probe.provider_name != "openai":
        return [skipped("chat ttft (p50)", f"provider {probe.provider_name} has no "
                        "/chat/completions")]
    try:
        chats = [await probe.stream_chat(sample) for _ in range(samples)]
    except errors.UpstreamStatusError as exc:
        if exc.status in (404, 405):
            return [skipped("chat ttft (p50)", "the service does not offer /chat/completions")]
        return [failing("chat ttft (p50)", explain(exc, probe.options))]
    except errors.TransportError as exc:
        return [failing("chat ttft (p50)", explain(exc, probe.options))]
    chat50 = percentile([t.ttft * 1000 for t in chats], 50)
    overhead = chat50 - ttft50
    return [
        info("chat ttft (p50)", chat50, "ms", hint="same prompt through /chat/completions"),
        info("chat total (p50)", percentile([t.total * 1000 for t in chats], 50), "ms"),
        judged("chat overhead (ttft)", overhead, CHAT_OVERHEAD_LIMIT,
               f"the chat endpoint adds {overhead:.0f} ms before the first token (message "
               "packing, chat template): use /completions for inline completion"),
    ]
