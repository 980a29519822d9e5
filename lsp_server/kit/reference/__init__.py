"""The reference completion service: a real OpenAI/llama.cpp/Ollama-shaped server.

A deterministic corpus engine (``engine``) behind a raw ASGI app (``app``)
served by hypercorn over HTTP/2 and HTTP/1.1, TLS or h2c (``listener``,
``tls``), with counters (``stats``), run-time fault modes (``faults``) and
static-key or issued-token auth (``tokens``). Run it with ``scopecache
upstream`` or ``python -m lsp_server.kit.reference``.
"""

from __future__ import annotations

from lsp_server.kit.reference.engine import Completion, CorpusEngine, count_tokens, split_tokens

__all__ = ["Completion", "CorpusEngine", "count_tokens", "split_tokens"]
