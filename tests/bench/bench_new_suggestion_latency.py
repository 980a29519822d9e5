"""Where the time goes between a key and a new suggestion, on the real code model.

The slow-model session (``tests.support.typing_session``: a developer types
real lines key by key, never accepting; llama.cpp's own server with
Qwen2.5-Coder-0.5B on two threads, one slot) is typed into the real
``scopecache serve``, asking after every key and cancelling the request
still outstanding at the next key, as editors do. Between scopecache and
llama.cpp sits a tap (``tests.support.sse_tap``) that times each request and
each event of its answer; a thread samples llama.cpp's ``/slots`` for the
server's busy seconds, as the slow-model benchmark does.

For each key at which a new suggestion appeared (not the one before, typed
through) the time from the key to the ghost is cut into stages, in the order
they happen, each clipped to the key->ghost span so that they add up to it:

- ``pacing``: the key's request had not yet reached the server, and no
  stream of ours ended just before it left (the throttle's wait);
- ``turn``: the same, but the request left within 15 ms of one of our
  streams ending (one stream per document: it waited for that stream,
  possibly after some pacing);
- ``queue``: the request was at the server, which had not yet started it
  (a stream given up but still evaluating its prompt; llama.cpp's one slot);
- ``prompt``: prompt evaluation (llama.cpp's ``timings.prompt_ms`` before
  the first token; all of the time to the first token when the stream
  was closed before its last event, which carries the timings);
- ``to line end``: from the first token to the first line's end (its
  newline, or the end of a one-line answer);
- ``answer path``: from then to the ghost in the editor (scopecache's
  answer, the gate, the LSP write, the editor's read).

A suggestion whose stream ended before its key is ``from memory`` (an L1
hit, or an answer kept from an earlier stream), one shown from a stream
still generating its line is ``so far``: all their time is the answer
path. Each run's server starts with an empty acceptance record (its own
cache directory): what earlier sessions kept would move the pacing.
Stages are reported as each one's share of all key->ghost time (the
sum over new suggestions), with medians; and the server's busy seconds.

Run: ``.venv/bin/python -m tests.bench.bench_new_suggestion_latency [--full] [--runs N]
[--set key=value ...]`` (``--set`` passes a scopecache setting, dotted, e.g.
``--set throttle.maxPauseMs=0``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lsprotocol import types

from lsp_server.kit.client import ServerProcess
from tests.support.code_model import ensure
from tests.support.sse_tap import Event, Relayed, SseTap
from tests.support.typing_session import (
    SESSION_LINES,
    SESSION_SOURCE,
    ClientRun,
    Key,
    ServerBusyMeter,
    SessionScore,
    Shown,
    TypingScript,
    code_model_server,
    scopecache_settings,
    typing_script,
    with_settings,
)

STAGES = ("pacing", "turn", "queue", "prompt", "to line end", "answer path")
#: a request that left this soon after one of our streams ended waited for its turn
TURN_SLACK = 0.015


@dataclass
class KeyTimes:
    """One key as the driver sent it and what came back before the next key."""

    key: Key
    sent: float
    answered: float | None = None
    text: str | None = None


@dataclass
class Breakdown:
    """One new suggestion's key->ghost time, by stage."""

    key: Key
    total: float
    stages: dict[str, float]
    #: "fresh", "running" (its stream was at the server before the key), "so far" (the
    #: line so far of a stream still generating), "memory"
    kind: str
    prompt_n: int | None = None
    cache_n: int | None = None
    tokens_to_line_end: int | None = None


@dataclass
class Run:
    """A session's keys, the requests the tap saw, and the server's busy seconds."""

    keys: list[KeyTimes]
    relayed: list[Relayed]
    busy_seconds: float
    stats: dict[str, Any] = field(default_factory=dict)
    #: llama.cpp's own counters at the end: prompt tokens evaluated, tokens generated
    work: dict[str, float] = field(default_factory=dict)


async def drive(
    script: TypingScript,
    settings: dict[str, Any],
    busy_url: str,
    log_file: str | None = None,
    tree: str | None = None,
) -> tuple[list[KeyTimes], float, dict[str, Any]]:
    """Type ``script`` into a real server as an editor does; every send and answer timed."""
    keys: list[KeyTimes] = []
    pending: list[tuple[str, asyncio.Task[None]]] = []
    logging: dict[str, Any] = {"log_file": log_file, "log_level": "DEBUG"} if log_file else {}
    sampler = ServerBusyMeter(busy_url)
    # What earlier sessions kept (the acceptance record in the user cache
    # directory) moves the pacing; each run starts from none, as a new user.
    home = tempfile.TemporaryDirectory(prefix="scopecache-cache-")
    env = dict(os.environ, XDG_CACHE_HOME=home.name)
    command = None
    if tree is not None:  # the server as another source tree has it (``-P``: not this one)
        env["PYTHONPATH"] = tree
        command = [sys.executable, "-P", "-m", "lsp_server", "serve"]
    async with ServerProcess(settings, command=command, env=env, **logging) as server:
        server.open(script.uri, script.text, "python")

        async def ask(times: KeyTimes, future: asyncio.Future[Any]) -> None:
            try:
                answer = await future
            except BaseException:
                return
            items = list(getattr(answer, "items", None) or [])
            text = items[0].insert_text if items else None
            times.answered = time.perf_counter()
            times.text = text if isinstance(text, str) else None

        with sampler:
            started = time.perf_counter()
            for key in script.keys:
                delay = started + key.t - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                for msg_id, task in pending:
                    if not task.done():
                        server.cancel(msg_id)
                pending = [(m, t) for m, t in pending if not t.done()]
                sl, sc, el, ec, text = key.edit
                server.change(script.uri, [{
                    "range": {"start": {"line": sl, "character": sc},
                              "end": {"line": el, "character": ec}},
                    "text": text,
                }])  # fmt: skip
                params = server.inline_params(script.uri, key.line, key.character)
                times = KeyTimes(key, time.perf_counter())
                msg_id, future = server.request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params)
                pending.append((msg_id, asyncio.ensure_future(ask(times, future))))
                keys.append(times)
            await asyncio.sleep(max(0.0, started + script.keys[-1].t + 1.0 - time.perf_counter()))
            for msg_id, task in pending:
                if not task.done():
                    server.cancel(msg_id)
            await asyncio.gather(*(t for _, t in pending), return_exceptions=True)
            stats = await server.stats()
            await asyncio.to_thread(sampler.wait_idle)
    home.cleanup()
    # what arrived after the next key was never on screen
    for times, after in zip(keys, [*keys[1:], None], strict=True):
        deadline = after.sent if after is not None else times.sent + 1.0
        if times.answered is None or times.answered > deadline or not times.text:
            times.answered, times.text = None, None
    return keys, sampler.busy_seconds, stats


def new_suggestions(keys: list[KeyTimes]) -> list[KeyTimes]:
    """Keys at which a suggestion appeared that was not the one before, typed through."""
    found: list[KeyTimes] = []
    before: KeyTimes | None = None
    for item in keys:
        typed = item.key.edit[4]
        carried = (
            before is not None and before.text and item.text and (before.text == typed + item.text)
        )
        if item.text and not carried:
            found.append(item)
        before = item
    return found


def _clip(start: float, end: float, lo: float, hi: float) -> float:
    return max(0.0, min(end, hi) - max(start, lo))


def breakdown(item: KeyTimes, relayed: list[Relayed]) -> Breakdown:
    """Cut one new suggestion's key->ghost time into stages."""
    t, ghost = item.sent, item.answered
    assert ghost is not None
    total = ghost - t
    stages = dict.fromkeys(STAGES, 0.0)
    done = [(r.line_done(), r) for r in relayed]
    serving = [(d, r) for d, r in done if d is not None and t <= d <= ghost]
    if not serving:
        # the line so far of a stream still generating, or an answer kept in memory
        stages["answer path"] = total
        running = any(
            r.t < t and (r.first_token or ghost) < ghost and (r.ended or ghost) >= ghost
            for r in relayed
        )
        return Breakdown(item.key, total, stages, "so far" if running else "memory")
    line_end, stream = max(serving, key=lambda pair: pair[0])
    first = stream.first_token or line_end
    timings = stream.timings or {}
    prompt_ms = float(timings.get("prompt_ms") or 0.0)
    # without llama.cpp's timings (a stream closed before its end) the wait for
    # the slot cannot be told from the prompt's evaluation: all of it is "prompt"
    server_start = max(stream.t, first - prompt_ms / 1000.0) if timings else stream.t
    if stream.t > t:
        ended = [r.ended for r in relayed if r is not stream and r.ended is not None]
        released = any(0.0 <= stream.t - e <= TURN_SLACK and e > t for e in ended)
        stages["turn" if released else "pacing"] = stream.t - t
    stages["queue"] = _clip(stream.t, server_start, t, ghost)
    stages["prompt"] = _clip(server_start, first, t, ghost)
    stages["to line end"] = _clip(first, line_end, t, ghost)
    stages["answer path"] = _clip(line_end, ghost, t, ghost)
    tokens = sum(1 for e in stream.events if e.content and e.t <= line_end)
    return Breakdown(
        item.key, total, stages, "fresh" if stream.t > t else "running",
        prompt_n=timings.get("prompt_n"), cache_n=timings.get("cache_n"),
        tokens_to_line_end=tokens,
    )  # fmt: skip


def measure(
    script: TypingScript,
    extra: dict[str, Any],
    log_file: str | None = None,
    tree: str | None = None,
) -> Run:
    """One session against a fresh llama.cpp server behind the tap."""
    model = ensure()

    async def session(url: str) -> Run:
        parsed = urlparse(url)
        async with SseTap(parsed.hostname or "127.0.0.1", parsed.port or 80) as tap:
            settings = with_settings(scopecache_settings(tap.url), extra)
            keys, busy, stats = await drive(script, settings, url, log_file, tree)
            return Run(keys, tap.relayed, busy, stats)

    with tempfile.TemporaryDirectory() as tmp, code_model_server(Path(tmp), model) as server:
        run = asyncio.run(session(server.url))
        # the server's own counts, closed streams included: its work, which load does not inflate
        counters = server.metrics()
        run.work = {
            "prompt_tokens": counters.get("prompt_tokens_total", 0.0),
            "generated_tokens": counters.get("tokens_predicted_total", 0.0),
        }
        return run


def summary(run: Run) -> dict[str, Any]:
    """The breakdown's figures for one run."""
    items = [breakdown(k, run.relayed) for k in new_suggestions(run.keys)]
    totals = [b.total for b in items]
    all_time = sum(totals) or 1.0
    kinds = {
        kind: sum(1 for b in items if b.kind == kind)
        for kind in ("fresh", "running", "so far", "memory")
    }
    fresh = [b for b in items if b.kind == "fresh"]
    return {
        "new_suggestions": len(items),
        "p50_ms": 1000 * statistics.median(totals) if totals else None,
        "p90_ms": 1000 * _percentile(totals, 90) if totals else None,
        "kinds": kinds,
        "share": {s: sum(b.stages[s] for b in items) / all_time for s in STAGES},
        "median_ms": {s: 1000 * statistics.median(b.stages[s] for b in items) for s in STAGES}
        if items
        else {},
        "fresh_median_ms": {s: 1000 * statistics.median(b.stages[s] for b in fresh) for s in STAGES}
        if fresh
        else {},
        "fresh_tokens_to_line_end_median": statistics.median(
            b.tokens_to_line_end or 0 for b in fresh
        )
        if fresh
        else None,
        "fresh_prompt_n_median": statistics.median(b.prompt_n or 0 for b in fresh)
        if fresh
        else None,
        "requests": len(run.relayed),
        "given_up": sum(1 for r in run.relayed if r.closed is not None),
        "busy_seconds": run.busy_seconds,
        "prompt_tokens": int(run.work.get("prompt_tokens", 0)),
        "generated_tokens": int(run.work.get("generated_tokens", 0)),
        "useful_shown_keys": sum(
            1
            for k in run.keys
            if k.text
            and k.text.split("\n")[0].strip()
            and (
                k.key.expect.startswith(k.text.split("\n")[0])
                or (k.key.expect and k.text.split("\n")[0].startswith(k.key.expect))
            )
        ),
        "shown_keys": sum(1 for k in run.keys if k.text),
        "score": _score(run),
    }


def _score(run: Run) -> dict[str, Any]:
    """The slow-model benchmark's figures for this run (``SessionScore``)."""
    client = ClientRun("scopecache", busy_seconds=run.busy_seconds)
    for k in run.keys:
        at = k.answered - k.sent if k.answered is not None else None
        client.shown.append(Shown(k.key, k.text, at))
    score = SessionScore.of(client)
    return {
        "useful_keys": score.useful_keys,
        "wrong_keys": score.wrong_keys,
        "useful_suggestions": score.useful_suggestions,
        "chars_saved_line": score.chars_saved_line,
        "chars_saved_lines": score.chars_saved_lines,
        "new_latency_p50": score.new_latency_p50,
        "new_latency_p90": score.new_latency_p90,
    }


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def table(label: str, figures: dict[str, Any]) -> str:
    """A plain-text table of one run's figures."""
    lines = [
        f"== {label}: {figures['new_suggestions']} new suggestions "
        f"(p50 {figures['p50_ms'] or 0:.0f} ms, p90 {figures['p90_ms'] or 0:.0f} ms), "
        f"kinds {figures['kinds']}, requests {figures['requests']} "
        f"(given up {figures['given_up']}), busy {figures['busy_seconds']:.1f} s "
        f"(tokens: {figures['prompt_tokens']} prompt, {figures['generated_tokens']} generated), "
        f"keys shown {figures['shown_keys']} useful {figures['useful_shown_keys']}"
    ]
    lines.append(f"score {figures['score']}")
    lines.append(f"{'stage':<12} {'share':>6} {'median ms':>10} {'fresh median ms':>16}")
    for stage in STAGES:
        lines.append(
            f"{stage:<12} {100 * figures['share'][stage]:>5.0f}% "
            f"{figures['median_ms'].get(stage, 0):>10.0f} "
            f"{figures['fresh_median_ms'].get(stage, 0):>16.0f}"
        )
    lines.append(
        f"fresh: median prompt_n {figures['fresh_prompt_n_median']}, "
        f"median tokens to line end {figures['fresh_tokens_to_line_end_median']}"
    )
    return "\n".join(lines)


def load(path: str, script: TypingScript) -> list[tuple[dict[str, Any], Run]]:
    """The runs a ``--json`` file kept (their settings and tree, and each run), to score again."""
    runs = []
    for saved in json.loads(Path(path).read_text()):
        keys = [
            KeyTimes(key, item["sent"], item["answered"], item["text"])
            for key, item in zip(script.keys, saved["keys"], strict=True)
        ]
        relayed = [
            Relayed(r["path"], r["t"], events=[Event(*e) for e in r["events"]], closed=r["closed"])
            for r in saved["relayed"]
        ]
        label = {"settings": saved.get("settings", {}), "tree": saved.get("tree")}
        figures = saved["figures"]
        work = {k: figures.get(k, 0) for k in ("prompt_tokens", "generated_tokens")}
        runs.append((label, Run(keys, relayed, figures["busy_seconds"], work=work)))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="twelve lines instead of six")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--source", default=SESSION_SOURCE, help="the file typed into (default: the session's)"
    )
    parser.add_argument(
        "--lines", metavar="FIRST,COUNT", help="the lines typed back (0-based first line)"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--ab",
        action="store_true",
        help="alternate runs without and with the --set settings, same session",
    )
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="alternate runs of the server from source tree DIR (before) and this one (after)",
    )
    parser.add_argument(
        "--after", metavar="DIR", help="with --before: the source tree of the 'after' runs"
    )
    parser.add_argument("--load", metavar="JSON", help="score the runs a --json file kept")
    parser.add_argument("--json", help="write every run's figures and raw times here")
    parser.add_argument("--log", help="scopecache's DEBUG log file")
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="typing speed factor (below 1: slower, for a machine loaded by other work)",
    )
    args = parser.parse_args()
    extra = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    first, count = SESSION_LINES["full" if args.full else "short"]
    if args.lines:
        first, count = (int(part) for part in args.lines.split(","))
    root = Path(__file__).resolve().parents[2]
    script = typing_script((root / args.source).read_text(), first, count, speed=args.speed)
    results = []
    if args.load:
        arms: dict[str, list[Breakdown]] = {}
        for number, (label, kept) in enumerate(load(args.load, script)):
            print(table(f"run {number + 1} {label}", summary(kept)), flush=True)
            items = [breakdown(k, kept.relayed) for k in new_suggestions(kept.keys)]
            arms.setdefault(str(label), []).extend(items)
        for arm, items in arms.items():
            all_time = sum(b.total for b in items) or 1.0
            shares = ", ".join(
                f"{stage} {100 * sum(b.stages[stage] for b in items) / all_time:.0f}%"
                for stage in STAGES
            )
            median = 1000 * statistics.median(b.total for b in items) if items else 0.0
            print(
                f"== all runs of {arm}: {len(items)} new suggestions, median {median:.0f} ms,"
                f" key->ghost {sum(b.total for b in items):.2f} s in all"
            )
            print(f"   share of key->ghost time: {shares}")
        return
    plan: list[tuple[dict[str, Any], str | None]] = [(extra, None)] * args.runs
    if args.ab:
        plan = [({}, None), (extra, None)] * args.runs
    elif args.before:
        plan = [(extra, args.before), (extra, args.after)] * args.runs
    for number, (settings, tree) in enumerate(plan):
        run = measure(script, settings, args.log, tree)
        figures = summary(run)
        label = f"run {number + 1} {settings or 'defaults'} {tree or 'this tree'}"
        print(table(label, figures), flush=True)
        results.append(
            {
                "settings": settings,
                "tree": tree,
                "figures": figures,
                "keys": [
                    {"t": k.key.t, "sent": k.sent, "answered": k.answered, "text": k.text}
                    for k in run.keys
                ],
                "relayed": [
                    {
                        "t": r.t,
                        "path": r.path,
                        "closed": r.closed,
                        "events": [[e.t, e.content, e.stop, e.timings] for e in r.events],
                    }
                    for r in run.relayed
                ],
            }
        )
        if args.json:  # after each run: a long session's figures are kept as they come
            Path(args.json).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
