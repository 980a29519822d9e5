"""Measure the confidence bar (``completion.minProbability``) on the real code model.

The real llama.cpp server (the xllamacpp wheel) serves Qwen2.5-Coder-0.5B
(Q4_K_M). Three typing sessions of twelve lines each, from different code
(``SESSIONS``), are typed key by key (``tests.support.typing_session``);
at every ``--every``-th key the document as it stands is sent to ``/infill``
as scopecache sends a one-line miss (the same provider, ``n_probs`` on,
greedy), and the answer, its tokens' probabilities and what the developer
went on to write on the line are written as ``lsp_server.kit.confidence``
records. Each bar is then scored: suggestions shown, useful and wrong,
held back, characters Tab saves on the line; with ``--onward``, each bar
beside each bar past the first token (``completion.minOnwardProbability``).
``--slow-model-sessions`` types the three sessions of the slow-model
benchmark (``tests.bench.bench_slow_model``) instead.

Run: ``.venv/bin/python -m tests.bench.confidence_threshold [--every 3] [--url URL]
[--out answers.jsonl] [--onward 0,0.5,0.6,0.7] [--slow-model-sessions]``
(``--url``: a llama.cpp server already running the model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from cache.entry import Confidence
from lsp_server.completion.gate import Surroundings, line_above_of, next_line_of
from lsp_server.kit.confidence import (
    DEFAULT_BARS,
    DEFAULT_ONWARD,
    ScoredAnswer,
    score_bars,
    table,
)
from tests.support.code_model import ensure
from tests.support.typing_session import TypingScript, typing_script
from transport.backend import CompletionRequest, chunk_probability
from transport.options import EndpointOptions
from transport.providers import decode_lines, provider_for

ROOT = Path(__file__).resolve().parents[2]
#: (file, first line, count): a CLI parser (the slow-model session), a data
#: model with predictable repetition, and a small algorithm
SESSIONS = (
    ("lsp_server/samples/todo_cli.py", 92, 12),
    ("lsp_server/samples/inventory.py", 48, 12),
    ("lsp_server/samples/tokenizer.py", 53, 12),
)
PREFIX_CHARS = 4000
SUFFIX_CHARS = 256


def _offset(text: str, line: int, character: int) -> int:
    start = 0
    for _ in range(line):
        start = text.index("\n", start) + 1
    return start + character


def states(script: TypingScript, every: int) -> list[tuple[str, int, str]]:
    """(document text, cursor offset, expect) after every ``every``-th key."""
    text = script.text
    out = []
    for index, key in enumerate(script.keys):
        sl, sc, el, ec, insert = key.edit
        start, end = _offset(text, sl, sc), _offset(text, el, ec)
        text = text[:start] + insert + text[end:]
        if index % every == 0:
            out.append((text, _offset(text, key.line, key.character), key.expect))
    return out


async def ask(
    client: httpx.AsyncClient, url: str, text: str, cursor: int
) -> tuple[str, Confidence]:
    """The model's one-line answer at ``cursor`` and its tokens' confidence."""
    provider = provider_for(EndpointOptions(endpoint=url, provider="llamacpp"))
    request = CompletionRequest(
        prefix=text[max(0, cursor - PREFIX_CHARS) : cursor],
        suffix=text[cursor : cursor + SUFFIX_CHARS],
        probabilities=True,
    )
    target, body = provider.build_request(request)
    answer = ""
    scores: list[tuple[int, float]] = []
    async with client.stream("POST", target, json=body) as response:
        response.raise_for_status()
        async for chunk in provider.parse_stream(decode_lines(response.aiter_raw())):
            probability = chunk_probability(chunk)
            if probability is not None:
                scores.append((len(answer), probability))
            answer += chunk
    return answer, Confidence.of_tokens(scores)


async def measure(
    url: str, every: int, sessions: tuple[tuple[str, int, int], ...] = SESSIONS
) -> list[ScoredAnswer]:
    """Ask the model at the sampled keys of every session."""
    records = []
    async with httpx.AsyncClient(timeout=120.0) as client:
        for path, first, count in sessions:
            script = typing_script((ROOT / path).read_text(), first, count)
            for text, cursor, expect in states(script, every):
                answer, confidence = await ask(client, url, text, cursor)
                line_start = text.rfind("\n", 0, cursor) + 1
                line_end = text.find("\n", cursor)
                line_end = len(text) if line_end < 0 else line_end
                around = Surroundings(
                    text[line_start:cursor], text[cursor:line_end],
                    next_line_of(text[cursor : cursor + SUFFIX_CHARS]),
                    line_above_of(text[max(0, line_start - 2000) : line_start]),
                )  # fmt: skip
                records.append(ScoredAnswer(answer, confidence, expect, around))
    return records


def main(argv: list[str] | None = None) -> int:
    """Measure, write the records, print the table."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.confidence_threshold")
    parser.add_argument("--every", type=int, default=3,
                        help="ask at every N-th key (default: %(default)s)")
    parser.add_argument("--url", default="",
                        help="a llama.cpp server already running the model (default: none, "
                             "start one)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of the server started (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("confidence-answers.jsonl"),
                        help="where the records go (default: %(default)s)")
    parser.add_argument("--onward", default="0",
                        help="bars past the first token, comma-separated, each scored with "
                             "every bar; 0 is the bar itself (default: %(default)s)")
    parser.add_argument("--slow-model-sessions", action="store_true",
                        help="type the slow-model benchmark's three sessions")
    args = parser.parse_args(argv)
    try:
        onward = tuple(float(b) for b in args.onward.split(",") if b.strip()) or DEFAULT_ONWARD
    except ValueError:
        parser.error(f"--onward takes comma-separated probabilities, not {args.onward!r}")
    sessions = SESSIONS
    if args.slow_model_sessions:
        from tests.bench.bench_slow_model import SESSIONS as SLOW

        sessions = tuple((s.source, s.first, s.count) for s in SLOW)
    started = time.perf_counter()
    if args.url:
        records = asyncio.run(measure(args.url, args.every, sessions))
    else:
        from tests.support.llamacpp import LlamaCppServer

        with tempfile.TemporaryDirectory() as tmp, LlamaCppServer(
            Path(tmp), model=ensure(), threads=args.threads, batch=1024,
            cache_reuse=256, slots=1, context=4096,
        ) as server:  # fmt: skip
            records = asyncio.run(measure(server.url, args.every, sessions))
    with args.out.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record.to_json()) + "\n")
    print(f"{len(records)} answers in {time.perf_counter() - started:.0f} s -> {args.out}")
    print(table(score_bars(records, DEFAULT_BARS, onward)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
