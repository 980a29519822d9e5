"""The request and response shapes of the APIs the reference service speaks.

This module holds the common part and the OpenAI shapes; llama.cpp and
Ollama live in ``local_dialects``. Each ``Dialect`` turns a JSON request
body into an ``Ask`` (what to complete) and renders the engine's answer:
a whole response body, one stream chunk per token, and the stream's
closing bytes. OpenAI completions and chat use SSE
(``data: {...}`` then ``data: [DONE]``), llama.cpp ``/infill`` uses SSE with
``"stop": true`` on the last chunk, Ollama ``/api/generate`` uses NDJSON.

A request that asks for token probabilities (OpenAI ``logprobs``, llama.cpp
``n_probs``, Ollama ``logprobs``) gets each token's probability, from the
engine, in the dialect's own shape; chat answers carry none.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from lsp_server.kit.reference.engine import Completion

MODEL = "scopecache-reference"


class BadRequest(ValueError):
    """The body is not a valid request for this endpoint."""


@dataclass(frozen=True)
class Ask:
    """What a client asked for, whatever the dialect."""

    prefix: str
    suffix: str = ""
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    multiline: bool | None = None
    model: str = MODEL
    include_usage: bool = False
    #: the client asked for each token's probability
    probabilities: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes."""
    return json.dumps(obj, separators=(",", ":")).encode()


def parse_stop(value: Any) -> tuple[str, ...]:
    """A ``stop`` field as a tuple; raises ``BadRequest``."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise BadRequest("stop must be a string or a list of strings")


def optional_int(value: Any, name: str) -> int | None:
    """An optional integer field; raises ``BadRequest``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer")
    return value


def logprob(probability: float) -> float:
    """The natural log of a probability (never of 0: the engine's shares are positive)."""
    return math.log(max(probability, 1e-9))


def multiline_hint(body: dict[str, Any]) -> bool | None:
    """The non-standard ``multiline`` field, when it is a boolean."""
    value = body.get("multiline")
    return value if isinstance(value, bool) else None


class Dialect:
    """One API shape; subclasses fill in parsing and rendering."""

    endpoint = ""
    media_type = "text/event-stream"

    def parse(self, body: dict[str, Any]) -> Ask:
        """The ``Ask`` in ``body``; raises ``BadRequest``."""
        raise NotImplementedError

    def full(self, ask: Ask, completion: Completion) -> bytes:
        """The non-streaming response body."""
        raise NotImplementedError

    def chunk(self, ask: Ask, delta: str, probability: float | None = None) -> bytes:
        """One stream chunk carrying ``delta`` (and its probability, if asked for)."""
        raise NotImplementedError

    def finish(self, ask: Ask, completion: Completion) -> bytes:
        """Bytes that end a stream."""
        raise NotImplementedError

    def broken_chunk(self) -> bytes:
        """A stream chunk whose JSON is cut short (fault mode)."""
        return b'data: {"choices": [{"text": "oops\n\n'

    def usage(self, completion: Completion) -> dict[str, int]:
        """OpenAI-style usage block."""
        done = completion.completion_tokens
        return {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": done,
            "total_tokens": completion.prompt_tokens + done,
        }


class OpenAICompletions(Dialect):
    """``POST /v1/completions``."""

    endpoint = "/v1/completions"

    def parse(self, body: dict[str, Any]) -> Ask:
        """See ``Dialect.parse``."""
        prompt = body.get("prompt", "")
        if isinstance(prompt, list):
            prompt = prompt[0] if prompt else ""
        suffix = body.get("suffix") or ""
        if not isinstance(prompt, str) or not isinstance(suffix, str):
            raise BadRequest("prompt and suffix must be strings")
        options = body.get("stream_options") or {}
        return Ask(
            prefix=prompt,
            suffix=suffix,
            max_tokens=optional_int(body.get("max_tokens"), "max_tokens"),
            stop=parse_stop(body.get("stop")),
            stream=bool(body.get("stream", False)),
            multiline=multiline_hint(body),
            model=str(body.get("model") or MODEL),
            include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
            probabilities=isinstance(body.get("logprobs"), int) and body["logprobs"] is not False,
        )

    def _envelope(self, ask: Ask, choice: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "cmpl-reference",
            "object": "text_completion",
            "created": int(time.time()),
            "model": ask.model,
            "choices": [choice],
        }

    def full(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.full``."""
        choice = {"text": completion.text, "index": 0, "logprobs": None,
                  "finish_reason": completion.finish_reason}
        return dumps({**self._envelope(ask, choice), "usage": self.usage(completion)})

    def chunk(self, ask: Ask, delta: str, probability: float | None = None) -> bytes:
        """See ``Dialect.chunk``: ``logprobs`` as OpenAI and vLLM give them."""
        logprobs = None
        if probability is not None:
            value = logprob(probability)
            logprobs = {"tokens": [delta], "token_logprobs": [value],
                        "top_logprobs": [{delta: value}], "text_offset": [0]}
        choice = {"text": delta, "index": 0, "logprobs": logprobs, "finish_reason": None}
        return b"data: " + dumps(self._envelope(ask, choice)) + b"\n\n"

    def finish(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.finish``."""
        choice = {"text": "", "index": 0, "logprobs": None,
                  "finish_reason": completion.finish_reason}
        out = b"data: " + dumps(self._envelope(ask, choice)) + b"\n\n"
        if ask.include_usage:
            tail = {**self._envelope(ask, {}), "choices": [], "usage": self.usage(completion)}
            out += b"data: " + dumps(tail) + b"\n\n"
        return out + b"data: [DONE]\n\n"


class OpenAIChat(OpenAICompletions):
    """``POST /v1/chat/completions``: the last user message is the prompt."""

    endpoint = "/v1/chat/completions"

    def parse(self, body: dict[str, Any]) -> Ask:
        """See ``Dialect.parse``."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages must be a non-empty list")
        prompt = ""
        for message in messages:
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                prompt = content if isinstance(content, str) else ""
        base = super().parse({**body, "prompt": prompt, "suffix": ""})
        return base

    def _envelope(self, ask: Ask, choice: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-reference",
            "object": "chat.completion.chunk" if ask.stream else "chat.completion",
            "created": int(time.time()),
            "model": ask.model,
            "choices": [choice] if choice else [],
        }

    def full(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.full``."""
        choice = {"index": 0, "message": {"role": "assistant", "content": completion.text},
                  "finish_reason": completion.finish_reason}
        return dumps({**self._envelope(ask, choice), "usage": self.usage(completion)})

    def chunk(self, ask: Ask, delta: str, probability: float | None = None) -> bytes:
        """See ``Dialect.chunk`` (no probabilities in chat answers)."""
        choice = {"index": 0, "delta": {"content": delta}, "finish_reason": None}
        return b"data: " + dumps(self._envelope(ask, choice)) + b"\n\n"

    def finish(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.finish``."""
        choice = {"index": 0, "delta": {}, "finish_reason": completion.finish_reason}
        out = b"data: " + dumps(self._envelope(ask, choice)) + b"\n\n"
        if ask.include_usage:
            tail = {**self._envelope(ask, {}), "usage": self.usage(completion)}
            out += b"data: " + dumps(tail) + b"\n\n"
        return out + b"data: [DONE]\n\n"
