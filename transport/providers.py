"""Provider wire formats: what to POST, and how to read the answer back.

One small interface, ``Provider``: ``build_request`` gives the URL and JSON
body for a ``CompletionRequest``; ``parse_stream`` turns the response's text
lines into completion text chunks; ``parse_body`` reads a non-streamed JSON
answer. Implementations: ``openai`` (``POST {endpoint}/completions``, SSE,
``[DONE]``; with a FIM template the prompt carries the FIM tokens and no
``suffix``), ``llamacpp`` (``POST {origin}/infill``, other files' chunks as
``input_extra``, SSE with ``content`` and a final ``stop: true``) and
``ollama`` (``POST {origin}/api/generate``, NDJSON with a final ``done: true``).
Without file tokens, other files' chunks go first as a comment block.

Each provider also reads the token numbers the service reports in its
last event (llama.cpp's ``timings``, ``tokens_cached`` and
``tokens_evaluated``; OpenAI's ``usage`` with
``prompt_tokens_details.cached_tokens``; Ollama's ``prompt_eval_count`` and
``eval_count``) and hands them to ``on_usage`` as a ``TokenUsage``.
``llamacpp`` keeps the prompt within the server's token limit (``/infill``
cuts a longer one without saying so): the context the service reported, or
``maxPromptTokens``, split as ``/infill`` splits it (three quarters for the
prefix), at the characters per token it measured or, when clearly lower, the
rate the server's token counts show.

An answer the service cut at the token limit ends with ``CUT_AT_LENGTH``:
OpenAI's ``finish_reason: "length"``, llama.cpp's ``stop_type: "limit"`` (or
``stopped_limit``; its ``truncated`` is about the prompt, not the answer),
Ollama's ``done_reason: "length"``.

Asked with ``CompletionRequest.probabilities``, each provider also asks for
the probability of every generated token and yields the text as
``ScoredText`` chunks, one per token where the tokens spell the text:
llama.cpp's ``n_probs`` (each event's ``completion_probabilities``, with a
``logprob`` per token; ``prob`` with ``post_sampling_probs``; ``probs`` with
``tok_str`` in servers before late 2024), OpenAI's ``logprobs`` (vLLM and
OpenAI: ``choices[].logprobs.tokens`` and ``token_logprobs``; llama.cpp's
``/v1/completions``: ``choices[].logprobs.content``), Ollama's ``logprobs``
(0.12.11 and later; an older Ollama ignores the field and the text comes as
plain ``str``). A non-streamed answer (a service that ignored ``stream``) is
not scored. A token whose text the service holds back (a possible start of a
stop word) passes its probability on to the text that next arrives.

Every malformed answer, and a stream that ends without its end marker (a
truncated answer must not be cached), raises ``UpstreamProtocolError``.
"""

from __future__ import annotations

import codecs
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from transport.backend import CUT_AT_LENGTH, CompletionRequest, ScoredText
from transport.errors import ConfigurationError, UpstreamProtocolError
from transport.options import EndpointOptions
from transport.prompt import FIM_TEMPLATES, comment_block, fit_prompt, render_fim
from transport.service_detect import ServiceProfile
from transport.slots import SlotPlan

logger = logging.getLogger(__name__)

#: a single line longer than this is not a sane completion chunk
MAX_LINE_CHARS = 1 << 20


async def decode_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """Split a byte stream into text lines; invalid UTF-8 is rejected, not replaced.

    A replacement character would end up in the editor and in the cache, so
    an answer that is not valid UTF-8 is an ``UpstreamProtocolError``.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    pending = ""
    try:
        async for chunk in chunks:
            pending += decoder.decode(chunk)
            *lines, pending = pending.split("\n")
            for line in lines:
                yield line.rstrip("\r")
            if len(pending) > MAX_LINE_CHARS:
                raise UpstreamProtocolError("answer line exceeds the size limit")
        pending += decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise UpstreamProtocolError("answer is not valid UTF-8") from exc
    if pending:
        yield pending.rstrip("\r")


def parse_json(text: str) -> Any:
    """Parse JSON; malformed input is an ``UpstreamProtocolError``."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UpstreamProtocolError("malformed JSON in the answer") from exc


async def sse_events(lines: AsyncIterable[str]) -> AsyncIterator[str]:
    """The ``data`` payloads of a server-sent-events stream."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
        elif field not in ("event", "id", "retry"):
            raise UpstreamProtocolError("malformed server-sent-events line")
    if data:
        yield "\n".join(data)


def _text_field(obj: Any, key: str) -> str:
    if not isinstance(obj, dict):
        raise UpstreamProtocolError("answer chunk is not a JSON object")
    value = obj.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UpstreamProtocolError(f"answer field {key!r} is not a string")
    return value


def _cut_openai(choice: Any) -> bool:
    return isinstance(choice, dict) and choice.get("finish_reason") == "length"


def _cut_llamacpp(chunk: Any) -> bool:
    if not isinstance(chunk, dict):
        return False
    return chunk.get("stop_type") == "limit" or chunk.get("stopped_limit") is True


def token_probability(record: Any) -> float | None:
    """One generated token's probability from its record, or None if it has none.

    ``logprob`` (llama.cpp since late 2024, Ollama, OpenAI's chat shape),
    ``prob`` (llama.cpp with ``post_sampling_probs``), or the entry of
    ``probs`` whose ``tok_str`` is the token's ``content`` (older llama.cpp).
    """
    if not isinstance(record, dict):
        return None
    logprob = _number(record.get("logprob"))
    if logprob is not None:
        return math.exp(min(0.0, logprob))
    prob = _number(record.get("prob"))
    if prob is not None:
        return prob
    candidates = record.get("probs")
    if isinstance(candidates, list):
        chosen = record.get("content")
        for candidate in candidates:
            if isinstance(candidate, dict) and candidate.get("tok_str") == chosen:
                return _number(candidate.get("prob"))
    return None


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number (not a bool, not NaN)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def _token_text(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    text = record.get("token", record.get("content"))
    return text if isinstance(text, str) else None


class ScoredChunks:
    """Turns one answer's text and token records into ``ScoredText`` chunks.

    A token whose text the service held back (llama.cpp keeps a possible
    start of a stop word until it knows) has a record but no text yet: its
    probability waits and lowers the next chunk's.
    """

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        #: the lowest probability of tokens whose text has not arrived (None: none)
        self._waiting: float | None = None

    def chunks(self, text: str, tokens: list[tuple[str | None, float]]) -> list[str]:
        """``text`` as chunks scored by ``tokens`` (each its text, if known, and probability).

        One chunk per token when the tokens spell ``text``; else one chunk
        with the lowest probability. Without any probability: plain ``text``.
        """
        if not tokens:
            if not text:
                return []
            if self._waiting is None:
                return [text]
            probability, self._waiting = self._waiting, None
            return [ScoredText(text, probability)]
        if not text:
            lowest = min(p for _, p in tokens)
            self._waiting = lowest if self._waiting is None else min(self._waiting, lowest)
            return []
        waiting, self._waiting = self._waiting, None
        pieces = [piece or "" for piece, _ in tokens]
        if all(pieces) and "".join(pieces) == text:
            out: list[str] = [
                ScoredText(piece, p) for piece, (_, p) in zip(pieces, tokens, strict=True)
            ]
            if waiting is not None:
                out[0] = ScoredText(pieces[0], min(waiting, tokens[0][1]))
            return out
        lowest = min(p for _, p in tokens)
        return [ScoredText(text, lowest if waiting is None else min(waiting, lowest))]


def scored_tokens(records: Any) -> list[tuple[str | None, float]]:
    """(text, probability) of each token record that has a probability."""
    if not isinstance(records, list):
        return []
    out: list[tuple[str | None, float]] = []
    for record in records:
        probability = token_probability(record)
        if probability is not None:
            out.append((_token_text(record), probability))
    return out


def openai_tokens(choice: Any) -> list[tuple[str | None, float]]:
    """A choice's ``logprobs``: ``tokens``/``token_logprobs`` or llama.cpp's ``content``."""
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    if not isinstance(logprobs, dict):
        return []
    if isinstance(logprobs.get("content"), list):
        return scored_tokens(logprobs["content"])
    tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
    if not isinstance(tokens, list) or not isinstance(values, list):
        return []
    out: list[tuple[str | None, float]] = []
    for token, value in zip(tokens, values, strict=False):
        logprob = _number(value)
        if logprob is not None:
            out.append((token if isinstance(token, str) else None, math.exp(min(0.0, logprob))))
    return out


@dataclass(frozen=True, kw_only=True)
class TokenUsage:
    """The token numbers one answer reported (0 where the service says nothing)."""

    #: prompt tokens the service read
    prompt: int = 0
    #: of those, the ones it had to evaluate
    evaluated: int = 0
    #: of those, the ones it reused from its KV cache
    cached: int = 0
    #: tokens it generated
    generated: int = 0


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _prompt_chars(body: dict[str, Any]) -> int:
    """Characters of prompt text in a llama.cpp request body (other files' chunks aside)."""
    return sum(len(body.get(name, "")) for name in ("input_prefix", "input_suffix", "prompt"))


def llamacpp_usage(chunk: dict[str, Any]) -> TokenUsage | None:
    """``timings`` (``prompt_n``, ``cache_n``, ``predicted_n``) and ``tokens_evaluated``."""
    timings = chunk.get("timings")
    if not isinstance(timings, dict):
        return None
    evaluated = _count(timings.get("prompt_n"))
    cached = _count(timings.get("cache_n"))
    prompt = _count(chunk.get("tokens_evaluated")) or evaluated + cached
    generated = _count(timings.get("predicted_n")) or _count(chunk.get("tokens_predicted"))
    return TokenUsage(prompt=prompt, evaluated=evaluated, cached=cached, generated=generated)


def openai_usage(chunk: dict[str, Any]) -> TokenUsage | None:
    """``usage`` (with ``prompt_tokens_details.cached_tokens``), or llama.cpp's ``timings``."""
    if isinstance(chunk.get("timings"), dict):
        from_timings = llamacpp_usage(chunk)
        usage = chunk.get("usage")
        if from_timings is not None and isinstance(usage, dict):
            prompt = _count(usage.get("prompt_tokens")) or from_timings.prompt
            return TokenUsage(prompt=prompt, evaluated=from_timings.evaluated,
                              cached=from_timings.cached, generated=from_timings.generated)
        return from_timings
    usage = chunk.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return TokenUsage(prompt=prompt, evaluated=max(0, prompt - cached), cached=cached,
                      generated=_count(usage.get("completion_tokens")))


def ollama_usage(chunk: dict[str, Any]) -> TokenUsage | None:
    """``prompt_eval_count`` (tokens evaluated) and ``eval_count`` of the ``done`` object."""
    if "prompt_eval_count" not in chunk and "eval_count" not in chunk:
        return None
    evaluated = _count(chunk.get("prompt_eval_count"))
    return TokenUsage(prompt=evaluated, evaluated=evaluated,
                      generated=_count(chunk.get("eval_count")))


UsageSink = Callable[[TokenUsage], None]


class Provider(ABC):
    """One service's wire format."""

    name = ""

    def __init__(self, options: EndpointOptions, profile: ServiceProfile | None = None) -> None:
        self.options = options
        #: what identification learnt about the service (None: not identified)
        self.profile = profile
        #: receives the token numbers of every answer that reports them
        self.on_usage: UsageSink | None = None
        #: the service answered a request asking for token probabilities with
        #: a client error: ask for them no more (``drop_probabilities``)
        self.probabilities_refused = False

    #: the body field that asks for token probabilities ("" when none)
    probability_field = ""

    def asks_probabilities(self, request: CompletionRequest) -> bool:
        """Whether this request's body asks for token probabilities."""
        return request.probabilities and not self.probabilities_refused

    def drop_probabilities(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """``body`` without its probability field, remembered for later requests.

        None when ``body`` did not ask for probabilities: a client error then
        has another cause. Some OpenAI-compatible services reject ``logprobs``
        (HTTP 400 or 422); they are asked as before, without it.
        """
        if not self.probability_field or self.probability_field not in body:
            return None
        self.probabilities_refused = True
        return {k: v for k, v in body.items() if k != self.probability_field}

    def report(self, usage: TokenUsage | None, sink: UsageSink | None = None) -> None:
        """Hand an answer's token numbers to ``on_usage`` and to this answer's ``sink``."""
        if usage is None:
            return
        if self.on_usage is not None:
            self.on_usage(usage)
        if sink is not None:
            sink(usage)

    def observe(self, body: dict[str, Any], usage: TokenUsage) -> None:
        """Learn from what the service reported for the request ``body`` (default: nothing)."""
        return None

    @property
    def fim_template(self) -> str:
        """The configured FIM template, else the one chosen from the model's name."""
        if self.options.fim_template:
            return self.options.fim_template
        return self.profile.fim_template if self.profile is not None else ""

    @property
    def model(self) -> str:
        """The configured model, else the one the service reported."""
        if self.options.model:
            return self.options.model
        return self.profile.model if self.profile is not None else ""

    def prompt(self, request: CompletionRequest) -> tuple[str, str]:
        """The request's prefix and suffix fitted to the configured budget."""
        return fit_prompt(
            request.prefix, request.suffix, self.options.prefix_chars, self.options.suffix_chars
        )

    def prefix_budget(self) -> int:
        """The most prefix characters ``prompt`` keeps whatever the suffix.

        A prefix that fits is sent whole, starting where the caller's
        prompt window put it; a longer one is cut at its start.
        """
        return self.options.prefix_chars

    def render(self, request: CompletionRequest, prefix: str, suffix: str) -> str:
        """The configured FIM template's prompt, other files' chunks first."""
        return render_fim(
            self.fim_template,
            prefix,
            suffix,
            request.extra,
            filename=request.filename,
            repo_name=request.repo_name,
            language=request.language,
            suffix_first=self.options.fim_order == "spm",
        )

    def stop(self, request: CompletionRequest) -> list[str]:
        """Stop sequences: a one-line request's line end, then the configured ones."""
        extra = FIM_TEMPLATES[self.fim_template].stop if self.fim_template else ()
        line = () if request.multiline else ("\n",)
        return list(dict.fromkeys((*line, *request.stop, *self.options.stop, *extra)))

    @property
    def probe_url(self) -> str:
        """A cheap GET used to open and warm the connection (any status will do)."""
        return f"{self.options.origin}/health"

    @abstractmethod
    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """The URL to POST to and the JSON body."""

    @abstractmethod
    def parse_stream(
        self, lines: AsyncIterable[str], sink: UsageSink | None = None
    ) -> AsyncGenerator[str, None]:
        """Completion text chunks from a streamed answer's lines; its token numbers to ``sink``."""

    @abstractmethod
    def parse_body(self, body: Any, sink: UsageSink | None = None) -> str:
        """The completion text of a non-streamed JSON answer; its token numbers to ``sink``."""

    def body_cut(self, body: Any) -> bool:
        """Whether a non-streamed answer was cut at the token limit (default: not known)."""
        return False


class OpenAIProvider(Provider):
    """OpenAI-compatible ``/completions`` with ``suffix``, or with a FIM template."""

    name = "openai"
    probability_field = "logprobs"

    @property
    def probe_url(self) -> str:
        """``GET {endpoint}/models`` (a 401 or 404 still opens the connection)."""
        return f"{self.options.openai_base}/models"

    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """POST {endpoint}/completions (``{origin}/v1/completions`` for a bare origin)."""
        prefix, suffix = self.prompt(request)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
            # the token numbers in the last chunk (vLLM, OpenAI; llama.cpp sends them anyway)
            "stream_options": {"include_usage": True},
        }
        if self.fim_template:
            body["prompt"] = self.render(request, prefix, suffix)
        else:
            body["prompt"] = comment_block(request.extra, request.language) + prefix
            body["suffix"] = suffix
        stop = self.stop(request)
        if stop:
            body["stop"] = stop
        if self.asks_probabilities(request):
            body["logprobs"] = 1  # the chosen token's, and one alternative
        return f"{self.options.openai_base}/completions", body

    def parse_body(self, body: Any, sink: UsageSink | None = None) -> str:
        """``choices[0].text``."""
        if isinstance(body, dict):
            self.report(openai_usage(body), sink)
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list):
            raise UpstreamProtocolError("answer has no choices")
        return "".join(_text_field(choice, "text") for choice in choices[:1])

    def body_cut(self, body: Any) -> bool:
        """``choices[0].finish_reason == "length"``."""
        choices = body.get("choices") if isinstance(body, dict) else None
        return bool(
            isinstance(choices, list) and choices and _cut_openai(choices[0])
        )

    async def parse_stream(
        self, lines: AsyncIterable[str], sink: UsageSink | None = None
    ) -> AsyncGenerator[str, None]:
        """SSE chunks until ``[DONE]`` (or a chunk with a finish reason)."""
        finished = cut = False
        scored = ScoredChunks()
        async for data in sse_events(lines):
            if data.strip() == "[DONE]":
                if cut:
                    yield CUT_AT_LENGTH
                return
            chunk = parse_json(data)
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            if isinstance(chunk, dict) and ("usage" in chunk or "timings" in chunk):
                self.report(openai_usage(chunk), sink)
            if choices == [] and isinstance(chunk.get("usage"), dict):
                continue  # the usage-only chunk of stream_options.include_usage
            if not isinstance(choices, list):
                raise UpstreamProtocolError("answer chunk has no choices")
            for choice in choices[:1]:
                for text in scored.chunks(_text_field(choice, "text"), openai_tokens(choice)):
                    yield text
                finished = finished or bool(choice.get("finish_reason"))
                cut = cut or _cut_openai(choice)
        if cut:
            yield CUT_AT_LENGTH
        if not finished:
            raise UpstreamProtocolError("stream ended before [DONE]")


class LlamaCppProvider(Provider):
    """llama.cpp server's ``/infill``."""

    name = "llamacpp"
    probability_field = "n_probs"

    #: characters per token assumed until the service measured its tokenizer
    FALLBACK_CHARS_PER_TOKEN = 2.5
    #: share of the token limit the prompt may use (the FIM tokens and BOS need room)
    HEADROOM = 0.9
    #: a prompt read as fewer than this share of the tokens it should take was cut
    CUT_RATIO = 0.6
    #: the share of its batch ``/infill`` gives the prefix (the suffix gets the rest)
    PREFIX_SHARE = 0.75
    #: the characters per token the server's answers show replace the measured
    #: ones only when this much lower: each change moves where the prompt is cut
    RATE_STEP = 0.1
    #: a prompt this many tokens' worth of characters longer than the one before
    #: and read as exactly as many tokens was cut (``_read_as_before``)
    GROWTH_TOKENS = 4

    def __init__(self, options: EndpointOptions, profile: ServiceProfile | None = None) -> None:
        super().__init__(options, profile)
        #: the token limit learnt from a prompt the server cut (0: none seen)
        self.learned_limit = 0
        #: prompts the server read only part of
        self.prompts_cut = 0
        #: characters per token of the prompts sent, as the server counted them
        #: (0: none seen yet below the measured rate)
        self.observed_chars_per_token = 0.0
        #: (characters, tokens read) of the last prompt without other files' chunks
        self._last_read: tuple[int, int] | None = None
        #: which slot each document's requests go to (``completion.slotPinning``)
        self.slot_plan = SlotPlan(
            profile.slots if options.slot_pinning and profile is not None else 0
        )

    def prompt_token_limit(self) -> int:
        """Tokens the prompt may have: ``maxPromptTokens``, and the slot's context less the answer.

        ``/infill`` keeps at most the batch size (``-b``) of prompt tokens and
        drops the rest without saying so; ``/props`` tells the context but not
        the batch size, so that comes from ``completion.maxPromptTokens``.
        """
        limit = self.options.max_prompt_tokens
        context = self.profile.context_tokens if self.profile is not None else 0
        if context:
            limit = min(limit, max(16, context - self.options.max_tokens))
        if self.learned_limit:
            limit = min(limit, self.learned_limit)
        return limit

    def expected_tokens(self, body: dict[str, Any]) -> int:
        """About how many tokens the prompt of ``body`` takes, at the measured rate."""
        return int(_prompt_chars(body) / self.chars_per_token())

    def observe(self, body: dict[str, Any], usage: TokenUsage) -> None:
        """Notice a prompt the server cut, and keep the next ones within what it kept.

        The server reports the prompt tokens it read; far fewer than the text
        sent should take means it cut the prompt at its batch size.
        """
        expected = self.expected_tokens(body)
        if usage.prompt <= 0 or expected < 64:
            return
        self._note_rate(body, usage.prompt)
        as_before = self._read_as_before(body, usage.prompt)
        if usage.prompt >= expected * self.CUT_RATIO and not as_before:
            return
        self.prompts_cut += 1
        learned = max(16, usage.prompt - 8)
        if self.learned_limit and learned >= self.learned_limit:
            return
        self.learned_limit = learned
        logger.warning(
            "llama.cpp at %s read %d prompt tokens of about %d sent: it cuts prompts at its "
            "batch size; prompts are now kept within %d tokens (start llama-server with a "
            "larger -b, or set completion.maxPromptTokens)",
            self.options.origin, usage.prompt, int(expected), learned)

    def _read_as_before(self, body: dict[str, Any], read: int) -> bool:
        """Whether the server read exactly as many tokens as of the last, clearly shorter prompt.

        The share of tokens read tells a cut only when the prompt is far
        longer than what the server keeps; one sized for a larger batch
        (``maxPromptTokens`` 1024 against ``-b 512``) is read as more than
        ``CUT_RATIO`` of it. But ``/infill`` keeps a fixed number of prefix
        tokens: while the user types, the prompt grows and the count stays,
        and every request starts one token later and is evaluated whole.
        """
        if body.get("input_extra"):
            return False  # other files' chunks count against another budget
        chars = _prompt_chars(body)
        last, self._last_read = self._last_read, (chars, read)
        if last is None:
            return False
        grown = chars - last[0]
        return read == last[1] and grown >= self.GROWTH_TOKENS * self.chars_per_token()

    def _note_rate(self, body: dict[str, Any], read: int) -> None:
        """Learn the characters per token of what was sent from the tokens the server read.

        The rate measured at identification comes from a sample; a file
        with shorter words takes more tokens. Only a rate clearly lower
        counts (``RATE_STEP``), so the budget, and with it where the prompt
        is cut, moves seldom. A prompt with other files' chunks is left
        out: the server counts their tokens against another budget. A
        prompt the server cut reads as a rate above the true one, never
        below, so the next prompts still shrink towards what fits.
        """
        if body.get("input_extra"):
            return
        rate = _prompt_chars(body) / read
        if rate < self.chars_per_token() * (1.0 - self.RATE_STEP):
            self.observed_chars_per_token = rate
            logger.info(
                "llama.cpp at %s counts %.2f characters per token in these prompts; "
                "prompts are sized at that rate now", self.options.origin, rate)

    def chars_per_token(self) -> float:
        """The tokenizer's characters per token: measured at identification, or lower as seen."""
        if self.observed_chars_per_token:
            return self.observed_chars_per_token
        measured = self.profile.chars_per_token if self.profile is not None else 0.0
        return measured or self.FALLBACK_CHARS_PER_TOKEN

    def prompt(self, request: CompletionRequest) -> tuple[str, str]:
        """Prefix and suffix within the character budget and the server's token limit.

        ``/infill`` keeps at most three quarters of its batch as prefix
        tokens and the rest as suffix, whatever the other side leaves: it
        cuts a longer prefix at its start, token by token. A prompt cut
        there that is shorter than the one before (the real state after a
        prefetch for a longer, predicted one) then starts earlier than what
        the server's KV cache holds, and ``--cache-reuse`` cannot insert
        tokens: the whole prompt is evaluated again. So for ``/infill`` each
        side is kept within its own share, never given what the other
        leaves; a suffix-first prompt to ``/completion``, which the server
        does not split, may give the prefix what a short suffix leaves.
        """
        prefix_chars = self.prefix_budget()
        suffix_chars = min(self.options.suffix_chars, self._char_budget() - prefix_chars)
        return fit_prompt(
            request.prefix, request.suffix, prefix_chars, suffix_chars, pooled=self.suffix_first
        )

    def prefix_budget(self) -> int:
        """``/infill``'s share of the token limit, in characters at the current rate.

        A suffix-first prompt may give its prefix more when the suffix is
        short; this is what it keeps whatever the suffix.
        """
        return min(self.options.prefix_chars, int(self._char_budget() * self.PREFIX_SHARE))

    def _char_budget(self) -> int:
        """The prompt's characters: the token limit, less headroom, at the current rate."""
        return int(self.prompt_token_limit() * self.HEADROOM * self.chars_per_token())

    @property
    def suffix_first(self) -> bool:
        """Whether to send the prompt suffix-first to ``/completion`` instead of ``/infill``.

        ``/infill`` always puts the prefix first (unless the server runs with
        ``--spm-infill``), so every keystroke re-evaluates the suffix after
        it, even with ``--cache-reuse``: the server reuses cached chunks only
        in the order they come, never past text inserted ahead of them. With
        ``completion.fimOrder = "spm"`` and a template trained suffix-first
        (``starcoder``, ``codellama``), the prompt is rendered here and only
        grows at its end between keystrokes.
        """
        template = self.fim_template
        return (
            self.options.fim_order == "spm"
            and bool(template)
            and FIM_TEMPLATES[template].spm is not None
        )

    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """POST {origin}/infill, or {origin}/completion for a suffix-first prompt."""
        prefix, suffix = self.prompt(request)
        body: dict[str, Any] = {
            "n_predict": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
            "cache_prompt": True,
        }
        if request.max_time_ms > 0:
            # counted from the first token, and only once a line is complete
            body["t_max_predict_ms"] = request.max_time_ms
        if request.multiline and request.indent > 0:
            # a line indented less than the cursor's has left the block
            body["n_indent"] = request.indent
        path = "/infill"
        if self.suffix_first:
            path = "/completion"
            body["prompt"] = self.render(request, prefix, suffix)
        else:
            body["input_prefix"] = prefix
            body["input_suffix"] = suffix
            if request.extra:
                body["input_extra"] = [
                    {"filename": chunk.filename, "text": chunk.text} for chunk in request.extra
                ]
        if self.asks_probabilities(request):
            # each token's probability before sampling: the model's own confidence
            body["n_probs"] = 1
        slot = self.slot_plan.slot_for(request.document, speculative=request.speculative)
        if slot is not None:
            body["id_slot"] = slot
        stop = self.stop(request)
        if stop:
            body["stop"] = stop
        return f"{self.options.origin}{path}", body

    def parse_body(self, body: Any, sink: UsageSink | None = None) -> str:
        """``content``."""
        if isinstance(body, dict):
            self.report(llamacpp_usage(body), sink)
        return _text_field(body, "content")

    def body_cut(self, body: Any) -> bool:
        """``stop_type == "limit"`` or ``stopped_limit``."""
        return _cut_llamacpp(body)

    async def parse_stream(
        self, lines: AsyncIterable[str], sink: UsageSink | None = None
    ) -> AsyncGenerator[str, None]:
        """SSE chunks with ``content`` until one says ``stop: true``."""
        scored = ScoredChunks()
        async for data in sse_events(lines):
            chunk = parse_json(data)
            text = _text_field(chunk, "content")
            for piece in scored.chunks(text, scored_tokens(chunk.get("completion_probabilities"))):
                yield piece
            if chunk.get("stop") is True:
                self.report(llamacpp_usage(chunk), sink)
                if _cut_llamacpp(chunk):
                    yield CUT_AT_LENGTH
                return
        raise UpstreamProtocolError("stream ended before stop")


class OllamaProvider(Provider):
    """Ollama's ``/api/generate`` (``suffix`` or a raw FIM prompt)."""

    name = "ollama"
    probability_field = "logprobs"

    @property
    def probe_url(self) -> str:
        """``GET /api/version``."""
        return f"{self.options.origin}/api/version"

    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """POST {origin}/api/generate."""
        prefix, suffix = self.prompt(request)
        options: dict[str, Any] = {
            "num_predict": request.max_tokens,
            "temperature": request.temperature,
        }
        stop = self.stop(request)
        if stop:
            options["stop"] = stop
        body: dict[str, Any] = {"model": self.model, "stream": True, "options": options}
        if self.asks_probabilities(request):
            body["logprobs"] = True  # Ollama 0.12.11 and later; older ones ignore it
        if self.options.keep_alive:
            body["keep_alive"] = self.options.keep_alive
        if self.fim_template:
            body["prompt"] = self.render(request, prefix, suffix)
            body["raw"] = True
        else:
            body["prompt"] = comment_block(request.extra, request.language) + prefix
            body["suffix"] = suffix
            body["raw"] = False
        return f"{self.options.origin}/api/generate", body

    def parse_body(self, body: Any, sink: UsageSink | None = None) -> str:
        """``response``."""
        if isinstance(body, dict):
            self.report(ollama_usage(body), sink)
        return _text_field(body, "response")

    def body_cut(self, body: Any) -> bool:
        """``done_reason == "length"``."""
        return isinstance(body, dict) and body.get("done_reason") == "length"

    async def parse_stream(
        self, lines: AsyncIterable[str], sink: UsageSink | None = None
    ) -> AsyncGenerator[str, None]:
        """NDJSON objects with ``response`` until ``done: true``."""
        scored = ScoredChunks()
        async for line in lines:
            if not line.strip():
                continue
            chunk = parse_json(line)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise UpstreamProtocolError("the service reported an error mid-stream")
            text = _text_field(chunk, "response")
            for piece in scored.chunks(text, scored_tokens(chunk.get("logprobs"))):
                yield piece
            if chunk.get("done") is True:
                self.report(ollama_usage(chunk), sink)
                if chunk.get("done_reason") == "length":
                    yield CUT_AT_LENGTH
                return
        raise UpstreamProtocolError("stream ended before done")


def provider_for(options: EndpointOptions, profile: ServiceProfile | None = None) -> Provider:
    """The provider named by ``options.provider``, or the one ``profile`` detected.

    ``auto`` before (or without) a profile is the OpenAI path: the safe guess.
    """
    kinds: dict[str, type[Provider]] = {
        "openai": OpenAIProvider,
        "llamacpp": LlamaCppProvider,
        "ollama": OllamaProvider,
    }
    name: str = options.provider
    if name == "auto":
        name = profile.kind if profile is not None else "openai"
    try:
        return kinds[name](options, profile)
    except KeyError:
        raise ConfigurationError(f"unknown provider {options.provider!r}") from None
