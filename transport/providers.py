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

Every malformed answer, and a stream that ends without its end marker (a
truncated answer must not be cached), raises ``UpstreamProtocolError``.
"""

from __future__ import annotations

import codecs
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from typing import Any

from transport.backend import CompletionRequest
from transport.errors import ConfigurationError, UpstreamProtocolError
from transport.options import EndpointOptions
from transport.prompt import FIM_TEMPLATES, comment_block, fit_prompt, render_fim

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


class Provider(ABC):
    """One service's wire format."""

    name = ""

    def __init__(self, options: EndpointOptions) -> None:
        self.options = options

    def prompt(self, request: CompletionRequest) -> tuple[str, str]:
        """The request's prefix and suffix fitted to the configured budget."""
        return fit_prompt(
            request.prefix, request.suffix, self.options.prefix_chars, self.options.suffix_chars
        )

    def render(self, request: CompletionRequest, prefix: str, suffix: str) -> str:
        """The configured FIM template's prompt, other files' chunks first."""
        return render_fim(
            self.options.fim_template,
            prefix,
            suffix,
            request.extra,
            filename=request.filename,
            repo_name=request.repo_name,
            language=request.language,
            suffix_first=self.options.fim_order == "spm",
        )

    def stop(self, request: CompletionRequest) -> list[str]:
        """Stop sequences: the request's, the configured ones, the template's."""
        extra = FIM_TEMPLATES[self.options.fim_template].stop if self.options.fim_template else ()
        return list(dict.fromkeys((*request.stop, *self.options.stop, *extra)))

    @property
    def probe_url(self) -> str:
        """A cheap GET used to open and warm the connection (any status will do)."""
        return f"{self.options.origin}/health"

    @abstractmethod
    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """The URL to POST to and the JSON body."""

    @abstractmethod
    def parse_stream(self, lines: AsyncIterable[str]) -> AsyncGenerator[str, None]:
        """Completion text chunks from a streamed answer's lines."""

    @abstractmethod
    def parse_body(self, body: Any) -> str:
        """The completion text of a non-streamed JSON answer."""


class OpenAIProvider(Provider):
    """OpenAI-compatible ``/completions`` with ``suffix``, or with a FIM template."""

    name = "openai"

    @property
    def probe_url(self) -> str:
        """``GET {endpoint}/models`` (a 401 or 404 still opens the connection)."""
        return f"{self.options.base_url}/models"

    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """POST {endpoint}/completions."""
        prefix, suffix = self.prompt(request)
        body: dict[str, Any] = {
            "model": self.options.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
        }
        if self.options.fim_template:
            body["prompt"] = self.render(request, prefix, suffix)
        else:
            body["prompt"] = comment_block(request.extra, request.language) + prefix
            body["suffix"] = suffix
        stop = self.stop(request)
        if stop:
            body["stop"] = stop
        return f"{self.options.base_url}/completions", body

    def parse_body(self, body: Any) -> str:
        """``choices[0].text``."""
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list):
            raise UpstreamProtocolError("answer has no choices")
        return "".join(_text_field(choice, "text") for choice in choices[:1])

    async def parse_stream(self, lines: AsyncIterable[str]) -> AsyncGenerator[str, None]:
        """SSE chunks until ``[DONE]`` (or a chunk with a finish reason)."""
        finished = False
        async for data in sse_events(lines):
            if data.strip() == "[DONE]":
                return
            chunk = parse_json(data)
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            if not isinstance(choices, list):
                raise UpstreamProtocolError("answer chunk has no choices")
            for choice in choices[:1]:
                text = _text_field(choice, "text")
                if text:
                    yield text
                finished = finished or bool(choice.get("finish_reason"))
        if not finished:
            raise UpstreamProtocolError("stream ended before [DONE]")


class LlamaCppProvider(Provider):
    """llama.cpp server's ``/infill``."""

    name = "llamacpp"

    def build_request(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
        """POST {origin}/infill."""
        prefix, suffix = self.prompt(request)
        body: dict[str, Any] = {
            "input_prefix": prefix,
            "input_suffix": suffix,
            "n_predict": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
            "cache_prompt": True,
        }
        if request.extra:
            body["input_extra"] = [
                {"filename": chunk.filename, "text": chunk.text} for chunk in request.extra
            ]
        stop = self.stop(request)
        if stop:
            body["stop"] = stop
        return f"{self.options.origin}/infill", body

    def parse_body(self, body: Any) -> str:
        """``content``."""
        return _text_field(body, "content")

    async def parse_stream(self, lines: AsyncIterable[str]) -> AsyncGenerator[str, None]:
        """SSE chunks with ``content`` until one says ``stop: true``."""
        async for data in sse_events(lines):
            chunk = parse_json(data)
            text = _text_field(chunk, "content")
            if text:
                yield text
            if chunk.get("stop") is True:
                return
        raise UpstreamProtocolError("stream ended before stop")


class OllamaProvider(Provider):
    """Ollama's ``/api/generate`` (``suffix`` or a raw FIM prompt)."""

    name = "ollama"

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
        body: dict[str, Any] = {"model": self.options.model, "stream": True, "options": options}
        if self.options.fim_template:
            body["prompt"] = self.render(request, prefix, suffix)
            body["raw"] = True
        else:
            body["prompt"] = comment_block(request.extra, request.language) + prefix
            body["suffix"] = suffix
            body["raw"] = False
        return f"{self.options.origin}/api/generate", body

    def parse_body(self, body: Any) -> str:
        """``response``."""
        return _text_field(body, "response")

    async def parse_stream(self, lines: AsyncIterable[str]) -> AsyncGenerator[str, None]:
        """NDJSON objects with ``response`` until ``done: true``."""
        async for line in lines:
            if not line.strip():
                continue
            chunk = parse_json(line)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise UpstreamProtocolError("the service reported an error mid-stream")
            text = _text_field(chunk, "response")
            if text:
                yield text
            if chunk.get("done") is True:
                return
        raise UpstreamProtocolError("stream ended before done")


def provider_for(options: EndpointOptions) -> Provider:
    """The provider named by ``options.provider``."""
    kinds: dict[str, type[Provider]] = {
        "openai": OpenAIProvider,
        "llamacpp": LlamaCppProvider,
        "ollama": OllamaProvider,
    }
    try:
        return kinds[options.provider](options)
    except KeyError:
        raise ConfigurationError(f"unknown provider {options.provider!r}") from None
