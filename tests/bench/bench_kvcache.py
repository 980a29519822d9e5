"""Misses the server answers from its KV cache, measured on the real llama.cpp server.

Synthesized editing sessions inside files larger than the prompt budget:
each file opens with its first lines already written (more text than the
prompt holds), the typist writes the next lines (with requests after
keystrokes, typos, accepted lines and returns to earlier lines), then goes
back into three earlier functions and adds a line to each. Every session is
replayed through a real ``scopecache serve`` process against the real
llama.cpp server of the test suite (tiny random-weight model, prompt caching
on, ``/infill``), one fresh server per row, with ``cache.policy = none`` so
that every design sends the same requests upstream.

For every prompt window (``completion.promptWindow``: ``sliding`` is
today's, ``anchored`` ours, ``lines`` llama.vscode's 256/64 lines, ``tokens``
Continue's token budget) and for the server's ``--cache-reuse`` off and at
256, it reads the token numbers every answer's ``timings`` reported (as
``scopecache/stats`` sums them) and reports:

* the **evaluated share**: prompt tokens the server evaluated / all prompt
  tokens sent, against today's sliding window in the same run;
* TTFT (p50 of the upstream requests), as a ratio to today's;
* ours again with cross-file context on (the other open file's chunks sent
  as ``input_extra``; the run fails if they add nothing to the prompts);
* ours suffix-first: ``completion.fimOrder = "spm"`` with the ``codellama``
  template, rendered client-side and sent to ``/completion``;
* the share of the tokens sent that went to full prefills (requests the
  server evaluated at least 90% of, from its log: a file's or a place's
  first prompt, or a document that lost its slot), ours against today's and
  against today's whole share: a floor under what any window can reach;
* ours with speculative prefetch on (and the scope cache, which keeps what
  it fetches ahead), with ``completion.slotPinning`` on against off: each
  document on slot 0 and prefetches on slot 1, or the server's own choice;
* last, with the default settings (``maxPromptTokens`` 1024) on a session
  over other modules (``HELD_OUT``), a server with the test suite's default
  batch (512, below the default limit: ``/infill`` cuts the prompts until
  the client learns the limit) against one with ``BATCH_TOKENS``.

Every other row runs with the budget below and names it (``BUDGET``).

The model's tokenizer has about one token per character (byte tokens and
single characters), so the budgets below are in characters and in tokens
alike; the server's batch is large enough that ``/infill`` never cuts a
prompt of ours (a real one would cut the llama.vscode-style window, and
does here too).

``make bench`` measures ours against today's window (with cross-file
context, suffix-first and speculation) with ``--cache-reuse`` off on a short
session (two files, six lines typed at the end of each, one earlier function
revisited); ``--long`` measures every window with ``--cache-reuse`` off and
at 256 on the long session (sixteen lines, two revisits): sixteen llama.cpp
servers, most of a quarter of an hour on a shared machine. ``--quick``
types two lines. The two speculation rows replay at the typist's pace, so
they run side by side (each on its own server), the load of the machine
falling on both alike.

Run: ``.venv/bin/python -m tests.bench.bench_kvcache [--quick] [--long]``.
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    TextChange,
    Trace,
    TraceHeader,
)
from tests.bench.rows import row

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
FILES = ("textwrap.py", "shlex.py")
#: the prompt budget of every row (characters, about as many tokens here)
PREFIX_CHARS = 1400
SUFFIX_CHARS = 350
#: ours: the suffix of a prefix-first prompt (the defaults' 256 of 1000, scaled)
PSM_SUFFIX_CHARS = 90
CONTEXT_CHARS = 800
MAX_TOKENS = 4
#: the server's batch: /infill keeps 3/4 of it for the prefix, 1/4 for the
#: suffix, and what the slot's context leaves beyond the batch for input_extra
BATCH_TOKENS = 2048
#: the client's token limit: high enough that it never cuts a row's prompt
#: itself (it gives the prefix 3/4 of 90% of the limit, about 1,730 characters
#: here), while the prompts stay within what the server keeps
MAX_PROMPT_TOKENS = 2560
#: the tiny model's width: narrow, so a full prefill per request stays affordable
EMBEDDING = 128
#: one request per this many of the typist's (a miss goes upstream after a
#: pause, not after every keystroke); keeps a full-window prefill per request
#: of the other designs affordable on a CPU
REQUEST_EVERY = 4
WINDOWS = (
    ("sliding", "today's sliding window"),
    ("anchored", "anchored window (ours)"),
    ("lines", "llama.vscode-style window (256/64 lines)"),
    ("tokens", "Continue-style token budget"),
)
#: the suffix-first row: the prompt rendered client-side (the tiny model has
#: CodeLlama's FIM tokens) and sent to /completion, suffix ahead of the prefix
SUFFIX_FIRST = {"fimTemplate": "codellama", "fimOrder": "spm"}
#: the speculation rows replay the trace at this multiple of the typist's pace
SPECULATION_SPEED = 2.0
RETURN_LINE = "checked = validate(value)"
#: the budget every row but the last runs with, as the row names say
BUDGET = f"maxPromptTokens {MAX_PROMPT_TOKENS}, prefixChars {PREFIX_CHARS}, -b {BATCH_TOKENS}"
#: the last row: modules the budgets were not tuned on, with the default settings
HELD_OUT = ("difflib.py", "calendar.py")
#: ... on a server with the test suite's default batch, below the default
#: maxPromptTokens (1024), against one with ``BATCH_TOKENS``
SMALL_BATCH = 512
DEFAULTS: dict[str, Any] = {
    "provider": "llamacpp",
    "cache": {"policy": "none", "l2": "none"},
    "speculative": {"enabled": False},
    "completion": {"maxTokens": MAX_TOKENS},
}


def _shift(position: Position, lines: int) -> Position:
    return Position(line=position.line + lines, character=position.character)


def _shifted(event: Event, lines: int, head: str) -> Event:
    """``event`` of a file written from scratch, moved below ``head``."""
    if isinstance(event, OpenEvent):
        return OpenEvent(t=event.t, uri=event.uri, text=head + event.text,
                         language_id=event.language_id)
    if isinstance(event, ChangeEvent):
        changes = tuple(
            TextChange(
                text=c.text,
                range=None
                if c.range is None
                else (_shift(c.range[0], lines), _shift(c.range[1], lines)),
            )
            for c in event.changes
        )
        return ChangeEvent(t=event.t, uri=event.uri, changes=changes)
    if isinstance(event, CompleteEvent):
        return CompleteEvent(t=event.t, uri=event.uri, position=_shift(event.position, lines),
                             kind=event.kind, expect=event.expect)
    return event


def _returns(uri: str, head_lines: list[str], t: float, count: int) -> list[Event]:
    """Go back into ``count`` earlier functions (bottom first) and add a line to each."""
    body = [
        i
        for i, line in enumerate(head_lines[:-1])
        if line.startswith("        ") and line.strip() and not line.strip().startswith(("#", '"'))
    ]
    spots = sorted({body[len(body) * (k + 1) // (count + 1)] for k in range(count)}, reverse=True)
    events: list[Event] = []
    for line in spots:
        indent = head_lines[line][: len(head_lines[line]) - len(head_lines[line].lstrip())]
        end = Position(line=line, character=len(head_lines[line]))
        t += 1.0
        events.append(ChangeEvent(t=t, uri=uri, changes=(TextChange("\n" + indent, (end, end)),)))
        column = len(indent)
        for char in RETURN_LINE:
            at = Position(line=line + 1, character=column)
            t += 0.1
            events.append(ChangeEvent(t=t, uri=uri, changes=(TextChange(char, (at, at)),)))
            column += 1
            if column % REQUEST_EVERY == 0:
                events.append(CompleteEvent(t=t, uri=uri, position=Position(line + 1, column)))
    return events


def editing_session(quick: bool, long: bool = False) -> Trace:
    """Files larger than the budget, edited at their end and in earlier functions."""
    if long:
        return sized_session(220, 16, 2)
    return sized_session(120, 2, 1) if quick else sized_session(120, 6, 1)


def sized_session(
    head_count: int, typed_count: int, returns: int, files: tuple[str, ...] = FILES
) -> Trace:
    """Each file opens with ``head_count`` lines, gets ``typed_count`` more typed at
    its end, then a line added in ``returns`` of its earlier functions.

    ``files`` are standard-library modules; other ones than ``FILES`` make a
    session the budgets were not tuned on."""
    heads: dict[str, list[str]] = {}
    typed: dict[str, str] = {}
    for name in files:
        lines = (STDLIB / name).read_text(encoding="utf-8").split("\n")
        uri = f"file:///bench/kv/{name}"
        heads[uri] = lines[:head_count]
        typed[uri] = "\n".join(lines[head_count : head_count + typed_count]) + "\n"
    written = synthesize(typed, seed=21)
    events: list[Event] = []
    closes: list[Event] = []
    requests = 0
    for event in written.events:
        if isinstance(event, CompleteEvent):
            requests += 1
            if requests % REQUEST_EVERY:
                continue
        head = heads[event.uri]
        moved = _shifted(event, len(head), "".join(f"{line}\n" for line in head))
        (closes if isinstance(moved, CloseEvent) else events).append(moved)
    t = events[-1].t if events else 0.0
    for uri, head in heads.items():
        events += _returns(uri, head, t, returns)
        t = events[-1].t
    events += [CloseEvent(t=t + 1.0, uri=e.uri) for e in closes]
    docs = TraceDocuments()
    finals: dict[str, str] = {}
    for event in events:
        if isinstance(event, CloseEvent):
            finals[event.uri] = docs.text(event.uri)
        docs.apply(event)
    meta = {"generator": "tests.bench.bench_kvcache", "files": list(heads)}
    return Trace(header=TraceHeader(final=finals, meta=meta), events=events)


def _settings(window: str, cross_file: bool, speculation: str = "") -> dict[str, Any]:
    """A row's settings; ``speculation`` "pinned" or "unpinned" turns prefetches on."""
    return {
        "provider": "llamacpp",
        # speculation needs a cache to keep what it fetches ahead
        "cache": {"policy": "hybrid" if speculation else "none", "l2": "none"},
        "speculative": {"enabled": bool(speculation)},
        "completion": {
            "promptWindow": "anchored" if window == "anchored+spm" else window,
            "prefixChars": PREFIX_CHARS,
            "suffixChars": SUFFIX_CHARS,
            "psmSuffixChars": PSM_SUFFIX_CHARS,
            "maxTokens": MAX_TOKENS,
            "maxPromptTokens": MAX_PROMPT_TOKENS,
            "slotPinning": speculation == "pinned",
            **(SUFFIX_FIRST if window == "anchored+spm" else {}),
        },
        "context": {"crossFile": cross_file, "maxChars": CONTEXT_CHARS},
    }


async def _measure(
    trace: Trace, workdir: Path, window: str, cache_reuse: int, cross_file: bool,
    speculation: str = "", *, batch: int = BATCH_TOKENS,
) -> dict[str, float]:
    """One row's numbers: a fresh llama.cpp server, the trace replayed through ``serve``.

    ``window`` "default": the default settings but for the cache (none) and
    the answer's length.
    """
    from tests.support.llamacpp import LlamaCppServer

    server = LlamaCppServer(workdir, batch=batch, embedding=EMBEDDING, cache_reuse=cache_reuse)
    await asyncio.to_thread(server.start)
    try:
        settings = (
            DEFAULTS if window == "default" else _settings(window, cross_file, speculation)
        )
        # speculation rows keep the typist's pace (sped up): prefetches run between keystrokes
        speed = SPECULATION_SPEED if speculation else 0.0
        result = await replay_trace(trace, endpoint=server.url, settings=settings, speed=speed)
    finally:
        await asyncio.to_thread(server.stop)
    log = (workdir / "llama-server.log").read_text(errors="replace")
    full = [(p, e) for p, e in server_requests(log) if e >= FULL_PREFILL * p]
    stats = result.server_stats
    tokens = stats.get("tokens", {})
    sent = float(tokens.get("prompt", 0))
    if not sent or stats.get("upstreamErrors"):
        raise RuntimeError(
            f"{window}: {stats.get('upstreamErrors')} upstream errors, {sent:.0f} prompt tokens"
        )
    return {
        "requests": float(stats.get("upstreamRequests", 0)),
        "speculative": float(stats.get("speculativeRequests", 0)),
        "sent": sent,
        "evaluated": float(tokens.get("evaluated", 0)),
        "share": float(tokens.get("evaluated", 0)) / sent,
        "ttft": float(stats.get("transport", {}).get("ttftMsP50", 0.0)),
        # requests the server evaluated (almost) in full: a file's or a place's
        # first prompt, or one whose slot the server gave to another document
        "prefills": float(len(full)),
        "prefilled": float(sum(e for _, e in full)),
    }


#: a request the server evaluated at least this share of was a full prefill
FULL_PREFILL = 0.9
_EVALUATED = re.compile(r"task (\d+) \| prompt eval time = .*/\s*(\d+) tokens")
_GENERATED = re.compile(r"task (\d+) \|\s+eval time = .*/\s*(\d+) tokens")
_RELEASED = re.compile(r"task (\d+) \| stop processing: n_tokens = (\d+)")


def server_requests(log: str) -> list[tuple[int, int]]:
    """(prompt tokens, evaluated tokens) of every request, from llama-server's log.

    The log tells per task the prompt tokens it evaluated, the tokens it
    generated and the tokens in the slot when it stopped (the prompt plus
    the generated tokens but the last).
    """
    evaluated: dict[int, int] = {}
    generated: dict[int, int] = {}
    out = []
    for line in log.splitlines():
        if m := _EVALUATED.search(line):
            evaluated[int(m[1])] = int(m[2])
        elif m := _GENERATED.search(line):
            generated[int(m[1])] = int(m[2])
        elif (m := _RELEASED.search(line)) and int(m[1]) in evaluated:
            task = int(m[1])
            prompt = int(m[2]) - max(0, generated.get(task, 0) - 1)
            out.append((prompt, evaluated[task]))
    return out


def _plan(long: bool) -> tuple[tuple[int, ...], tuple[tuple[str, str], ...]]:
    """Cache-reuse values and windows: all of them (long), or ours against today's."""
    return ((0, 256), WINDOWS) if long else ((0,), WINDOWS[:2])


Results = dict[tuple[str, int, bool], dict[str, float]]


async def measure_speculation(trace: Trace, workdir: Path, cache_reuse: int, out: Results) -> None:
    """Ours with speculative prefetch on, with and without slot pinning, side by side."""
    kinds = ("unpinned", "pinned")
    for kind in kinds:
        (workdir / kind).mkdir(exist_ok=True)
    measured = await asyncio.gather(
        *(_measure(trace, workdir / kind, "anchored", cache_reuse, False, kind) for kind in kinds)
    )
    for kind, numbers in zip(kinds, measured, strict=True):
        out[(kind, cache_reuse, False)] = numbers


async def measure_all(quick: bool, long: bool = False) -> Results:
    """Every window (long), ours with cross-file context, suffix-first, and ours
    with speculation, its prefetches on a slot of their own or not."""
    trace = editing_session(quick, long)
    reuses, windows = _plan(long)
    out: Results = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for cache_reuse in reuses:
            for window, _label in windows:
                out[(window, cache_reuse, False)] = await _measure(
                    trace, workdir, window, cache_reuse, False
                )
            out[("anchored", cache_reuse, True)] = await _measure(
                trace, workdir, "anchored", cache_reuse, True
            )
            out[("anchored+spm", cache_reuse, False)] = await _measure(
                trace, workdir, "anchored+spm", cache_reuse, False
            )
            await measure_speculation(trace, workdir, cache_reuse, out)
        held_out = sized_session(120, 6, 1, files=HELD_OUT)
        for batch in (SMALL_BATCH, BATCH_TOKENS):
            (workdir / f"b{batch}").mkdir()
            out[("default", batch, False)] = await _measure(
                held_out, workdir / f"b{batch}", "default", 0, False, batch=batch
            )
    return out


def run(quick: bool = False, long: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows (every window, both cache-reuse settings with ``long``)."""
    from tests.support.llamacpp import missing_reason

    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    results = asyncio.run(measure_all(quick, long))
    reuses, windows = _plan(long)
    rows = []
    for cache_reuse in reuses:
        reuse = f"--cache-reuse {cache_reuse}" if cache_reuse else "--cache-reuse off"
        flag = f"{reuse}, {BUDGET}"
        base = results[("sliding", cache_reuse, False)]
        requests = int(base["requests"])
        rows.append(
            row(f"evaluated share, today's sliding window ({flag}, {requests} requests)",
                 base["share"], 1.0, "evaluated/sent")
        )
        others = [("anchored+cross", "ours with cross-file context"),
                  ("anchored+spm", "ours suffix-first (/completion, fimOrder spm)")]
        for window, label in [*windows[1:], *others]:
            key = ("anchored", cache_reuse, True) if window == "anchored+cross" else (
                window, cache_reuse, False)
            r = results[key]
            rows.append(row(f"evaluated share, {label} vs sliding ({flag})",
                             r["share"], base["share"], "evaluated/sent"))
            rows.append(row(f"TTFT p50, {label} vs sliding ({flag})",
                             r["ttft"], base["ttft"], "ms"))
        ours = results[("anchored", cache_reuse, False)]
        cross = results[("anchored", cache_reuse, True)]
        if cross["sent"] / cross["requests"] <= ours["sent"] / ours["requests"]:
            raise RuntimeError(f"cross-file context sent nothing more ({flag})")
        rows.append(row(f"prompt tokens per request, ours with cross-file vs without ({flag})",
                         cross["sent"] / cross["requests"], ours["sent"] / ours["requests"],
                         "tokens"))
        rows.extend(prefill_rows(ours, base, flag))
        rows.extend(speculation_rows(results, cache_reuse, flag))
    rows.extend(default_budget_rows(results))
    return rows


def default_budget_rows(results: Results) -> list[dict[str, Any]]:
    """Ours with the default settings on a server whose batch is below the default limit."""
    small = results[("default", SMALL_BATCH, False)]
    fits = results[("default", BATCH_TOKENS, False)]
    return [
        row(f"evaluated share, ours with default settings (maxPromptTokens 1024), "
            f"held-out session, -b {SMALL_BATCH} vs -b {BATCH_TOKENS} "
            f"({int(small['prefills'])}/{int(fits['prefills'])} full prefills)",
            small["share"], fits["share"], "evaluated/sent"),
    ]


def prefill_rows(ours: dict[str, float], base: dict[str, float], flag: str) -> list[dict[str, Any]]:
    """What full prefills alone cost, as a share of all prompt tokens, ours against today's.

    A file's first prompt and the first prompt at a place the user goes back
    to are text no earlier prompt held: every window has the server evaluate
    them in full. Their share is a floor under the evaluated share.
    """
    return [
        row(f"evaluated share in full prefills, ours ({int(ours['prefills'])}) vs "
             f"sliding ({int(base['prefills'])}) ({flag})",
             ours["prefilled"] / ours["sent"], base["prefilled"] / base["sent"], "evaluated/sent"),
        row(f"evaluated share in full prefills, ours vs sliding's whole share ({flag})",
             ours["prefilled"] / ours["sent"], base["share"], "evaluated/sent"),
    ]


def speculation_rows(results: Results, cache_reuse: int, flag: str) -> list[dict[str, Any]]:
    """Ours with speculation: slot pinning against the server's own slot choice."""
    free = results[("unpinned", cache_reuse, False)]
    pinned = results[("pinned", cache_reuse, False)]
    counts = (f"{int(pinned['requests'])}/{int(free['requests'])} requests, "
              f"{int(pinned['speculative'])}/{int(free['speculative'])} speculative")
    return [
        row(f"evaluated share, ours with speculation, slot pinning vs none ({flag}, {counts})",
             pinned["share"], free["share"], "evaluated/sent"),
        row(f"TTFT p50, ours with speculation, slot pinning vs none ({flag})",
             pinned["ttft"], free["ttft"], "ms"),
    ]


if __name__ == "__main__":
    for row in run("--quick" in sys.argv, "--long" in sys.argv):
        print(row)
