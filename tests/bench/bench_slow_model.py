"""A real code model slower than the typist: scopecache against a finish-every-request client.

llama.cpp's own server (the xllamacpp wheel) serves Qwen2.5-Coder-0.5B
(Q4_K_M) on two CPU threads, one slot, ``-b 1024 -ub 1024 --cache-reuse 256``.
A developer types lines of a real file into it key by key at a human pace,
never accepting (``tests.support.typing_session``). The same keystrokes, at
the same times, go to two clients, each against a freshly started server:

- scopecache: the real ``scopecache serve`` with only ``endpoint`` and
  ``model`` set, asked after every key, the outstanding request cancelled at
  the next key, as editors do;
- the baseline: llama.vim's strategy, straight to ``/infill`` with its
  request: one request at a time, never cancelled, the newest state asked
  when it finishes, a finished answer shown while the typing agrees with it.

Rows (scopecache's value, the baseline's, their ratio): keys after which a
suggestion was on screen before the next key, useful ones, characters Tab
would have saved, and the server's busy seconds per useful suggestion (lower
is better). ``make bench`` (and ``--quick``) types six lines; ``--long``
types twelve and adds the same rows against the baseline with greedy
decoding instead of llama.vim's sampling (scopecache decodes greedily): the
strategy alone.

Run: ``.venv/bin/python -m tests.bench.bench_slow_model [--long]``.
"""

from __future__ import annotations

import asyncio
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.code_model import ensure
from tests.support.llamacpp import missing_reason
from tests.support.typing_session import (
    ClientRun,
    SessionScore,
    TypingScript,
    code_model_server,
    code_model_session,
    run_finishing,
    run_scopecache,
    scopecache_settings,
)


def _row(name: str, value: float, baseline: float, unit: str) -> dict[str, Any]:
    if baseline:
        ratio: float | None = value / baseline
    else:
        ratio = None if not value else math.inf
    return {"name": name, "value": value, "baseline": baseline, "ratio": ratio, "unit": unit}


async def _session(script: TypingScript, model: Path, client: str) -> ClientRun:
    with tempfile.TemporaryDirectory() as tmp, code_model_server(Path(tmp), model) as server:
        if client == "scopecache":
            return await run_scopecache(
                script, scopecache_settings(server.url), busy_url=server.url
            )
        return await run_finishing(script, server.url, greedy=client == "greedy")


def measure(long: bool) -> dict[str, SessionScore]:
    """Each client's score on the same typing session, by client."""
    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    script = code_model_session("full" if long else "short")
    model = ensure()
    clients = ["scopecache", "llama.vim"] + (["greedy"] if long else [])
    return {name: SessionScore.of(asyncio.run(_session(script, model, name))) for name in clients}


def _rows(ours: SessionScore, theirs: SessionScore, against: str) -> list[dict[str, Any]]:
    keys = f"of {ours.keys} keys"
    return [
        _row(f"shown before the next key ({keys}), vs {against}", ours.shown, theirs.shown,
             "keys"),
        _row(f"useful suggestions shown, vs {against}", ours.useful, theirs.useful, "keys"),
        _row(f"characters Tab would have saved, vs {against}", ours.chars_saved,
             theirs.chars_saved, "chars"),
        _row(f"server seconds per useful suggestion, vs {against}", ours.seconds_per_useful,
             theirs.seconds_per_useful, "s"),
        _row(f"requests that reached the server, vs {against}", ours.requests, theirs.requests,
             "n"),
    ]


def run(quick: bool = False, long: bool = False) -> list[dict[str, Any]]:
    """The benchmark rows (``quick`` changes nothing: the short session is already short)."""
    scores = measure(long)
    ours = scores.pop("scopecache")
    rows = _rows(ours, scores["llama.vim"], "llama.vim's strategy")
    if "greedy" in scores:
        rows += _rows(ours, scores["greedy"], "the same, greedy")
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import table

    print(table(run(long="--long" in sys.argv[1:])))
