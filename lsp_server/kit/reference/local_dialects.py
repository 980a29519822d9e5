"""The llama.cpp ``/infill`` and Ollama ``/api/generate`` request and response shapes."""

from __future__ import annotations

import time
from typing import Any

from lsp_server.kit.reference.dialects import (
    MODEL,
    Ask,
    BadRequest,
    Dialect,
    dumps,
    logprob,
    multiline_hint,
    optional_int,
    parse_stop,
)
from lsp_server.kit.reference.engine import Completion


class LlamaInfill(Dialect):
    """``POST /infill`` (llama.cpp server)."""

    endpoint = "/infill"

    def parse(self, body: dict[str, Any]) -> Ask:
        """See ``Dialect.parse``."""
        prefix = body.get("input_prefix", "")
        suffix = body.get("input_suffix", "")
        extra = body.get("prompt", "")
        if not all(isinstance(v, str) for v in (prefix, suffix, extra)):
            raise BadRequest("input_prefix, input_suffix and prompt must be strings")
        n_predict = optional_int(body.get("n_predict"), "n_predict")
        return Ask(
            prefix=prefix + extra,
            suffix=suffix,
            max_tokens=None if n_predict is None or n_predict < 0 else n_predict,
            stop=parse_stop(body.get("stop")),
            stream=bool(body.get("stream", False)),
            multiline=multiline_hint(body),
            probabilities=(optional_int(body.get("n_probs"), "n_probs") or 0) > 0,
        )

    def _final(self, completion: Completion, content: str) -> dict[str, Any]:
        return {
            "content": content,
            "stop": True,
            "tokens_predicted": completion.completion_tokens,
            "tokens_evaluated": completion.prompt_tokens,
            "tokens_cached": completion.prompt_tokens + completion.completion_tokens,
            "stopped_limit": completion.finish_reason == "length",
            "stop_type": "limit" if completion.finish_reason == "length" else "eos",
            "truncated": False,
            # no KV cache here: every prompt token is evaluated
            "timings": {
                "prompt_n": completion.prompt_tokens,
                "cache_n": 0,
                "predicted_n": completion.completion_tokens,
            },
        }

    def full(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.full``."""
        return dumps(self._final(completion, completion.text))

    def chunk(self, ask: Ask, delta: str, probability: float | None = None) -> bytes:
        """See ``Dialect.chunk``: ``completion_probabilities`` as llama.cpp gives them."""
        event: dict[str, Any] = {"content": delta, "stop": False}
        if probability is not None:
            value = logprob(probability)
            event["completion_probabilities"] = [{
                "id": 0, "token": delta, "bytes": list(delta.encode()), "logprob": value,
                "top_logprobs": [{"id": 0, "token": delta, "logprob": value}],
            }]
        return b"data: " + dumps(event) + b"\n\n"

    def finish(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.finish``."""
        return b"data: " + dumps(self._final(completion, "")) + b"\n\n"

    def broken_chunk(self) -> bytes:
        """See ``Dialect.broken_chunk``."""
        return b'data: {"content": "oops\n\n'


class OllamaGenerate(Dialect):
    """``POST /api/generate`` (Ollama): NDJSON, streaming by default."""

    endpoint = "/api/generate"
    media_type = "application/x-ndjson"

    def parse(self, body: dict[str, Any]) -> Ask:
        """See ``Dialect.parse``."""
        prompt = body.get("prompt", "")
        suffix = body.get("suffix") or ""
        if not isinstance(prompt, str) or not isinstance(suffix, str):
            raise BadRequest("prompt and suffix must be strings")
        options = body.get("options") or {}
        if not isinstance(options, dict):
            raise BadRequest("options must be an object")
        num_predict = optional_int(options.get("num_predict"), "options.num_predict")
        return Ask(
            prefix=prompt,
            suffix=suffix,
            max_tokens=None if num_predict is None or num_predict < 0 else num_predict,
            stop=parse_stop(options.get("stop")),
            stream=bool(body.get("stream", True)),
            multiline=multiline_hint(body),
            model=str(body.get("model") or MODEL),
            probabilities=body.get("logprobs") is True,
        )

    def _line(self, ask: Ask, **fields: Any) -> bytes:
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return dumps({"model": ask.model, "created_at": created, **fields}) + b"\n"

    def _done(self, ask: Ask, completion: Completion, response: str) -> bytes:
        return self._line(
            ask,
            response=response,
            done=True,
            done_reason="length" if completion.finish_reason == "length" else "stop",
            prompt_eval_count=completion.prompt_tokens,
            eval_count=completion.completion_tokens,
        )

    def full(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.full``."""
        return self._done(ask, completion, completion.text)

    def chunk(self, ask: Ask, delta: str, probability: float | None = None) -> bytes:
        """See ``Dialect.chunk``: ``logprobs`` as Ollama gives them."""
        if probability is None:
            return self._line(ask, response=delta, done=False)
        scored = [{"token": delta, "logprob": logprob(probability), "top_logprobs": []}]
        return self._line(ask, response=delta, done=False, logprobs=scored)

    def finish(self, ask: Ask, completion: Completion) -> bytes:
        """See ``Dialect.finish``."""
        return self._done(ask, completion, "")

    def broken_chunk(self) -> bytes:
        """See ``Dialect.broken_chunk``."""
        return b'{"response": "oops\n'
