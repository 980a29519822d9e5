"""A real code model slower than the typist: scopecache against llama.vim's client.

llama.cpp's own server (the xllamacpp wheel) serves Qwen2.5-Coder-0.5B
(Q4_K_M) on two CPU threads, one slot, ``-b 1024 -ub 1024 --cache-reuse 256``.
A developer types lines of a real file into it key by key at a human pace,
never accepting (``tests.support.typing_session``). The same keystrokes, at
the same times, go to each client against a freshly started server:

- scopecache: the real ``scopecache serve`` with only ``endpoint`` and
  ``model`` set, asked after every key, the outstanding request cancelled at
  the next key, as editors do;
- the baseline, llama.vim's client as ggml-org/llama.vim at commit
  a1c8e6e40cb45df59b78add5b65d575386832465 (2026-01-31) behaves with its
  defaults (``tests.support.llama_vim``), straight to ``/infill``: one request
  at a time, never cancelled, retried every 100 ms for the cursor's place
  while one runs; the first request for a place with ``t_max_predict_ms``
  250, and after a suggestion shows a speculative one as if it were accepted
  with 1000; nothing asked where its result cache (keyed on the local
  context) already holds an answer; ``top_k`` 40, ``top_p`` 0.90, samplers
  ``top_k, top_p, infill``, ``n_predict`` 128, ``cache_prompt``, 256 lines
  before and 64 after, no extra context (none gathers in this session);
- with ``--long``, the same client with greedy decoding (temperature 0) in
  place of its samplers, as scopecache decodes: the strategy alone.

Rows (scopecache's value, the baseline's, their ratio): keys after which a
suggestion was on screen before the next key, the useful and the wrong ones;
useful suggestions (a suggestion typed through counts once, not once per
key); characters Tab would have saved, accepting first lines only and
accepting whole suggestions over several lines; the seconds from a key to a
new suggestion (p50, p90); the server's busy seconds, in all and per useful
suggestion; requests that reached the server. ``make bench`` (and
``--quick``) types six lines; ``--long`` types twelve.

``--sessions`` types three twelve-line sessions from different code (an
argparse parser's subcommands, the predictable one; a string reader's loop; a
retry loop's body), scopecache and the baseline each against a fresh server,
and checks each against the goals: at least 1.2 times the baseline's
characters saved on the line and as many over several lines, at least as many
useful keys, a wrong suggestion at no more keys, at most half its server
seconds. ``--sessions --ours-only --runs N --set KEY=VALUE`` runs scopecache's
side alone, N times per session, for trying a setting: the baseline's
column does not depend on it, and one client's runs vary enough that one
run says little.

Run: ``.venv/bin/python -m tests.bench.bench_slow_model [--long | --sessions
[--only N] [--set KEY=VALUE] [--ours-only --runs N]]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.rows import row
from tests.support.code_model import ensure
from tests.support.llama_vim import LLAMA_VIM_COMMIT, run_llama_vim
from tests.support.llamacpp import missing_reason
from tests.support.typing_session import (
    ClientRun,
    SessionScore,
    TypingScript,
    code_model_server,
    code_model_session,
    run_scopecache,
    sample_script,
    scopecache_settings,
    with_settings,
)

#: the baseline's name in the table
BASELINE = f"llama.vim {LLAMA_VIM_COMMIT[:7]}"


async def _session(
    script: TypingScript,
    model: Path,
    client: str,
    extra: dict[str, Any] | None = None,
    log_file: Path | None = None,
) -> ClientRun:
    with tempfile.TemporaryDirectory() as tmp, code_model_server(Path(tmp), model) as server:
        if client == "scopecache":
            settings = with_settings(scopecache_settings(server.url), extra or {})
            log = str(log_file) if log_file is not None else None
            return await run_scopecache(script, settings, busy_url=server.url, log_file=log)
        return await run_llama_vim(script, server.url, greedy=client == "greedy")


def _dump(run: ClientRun, path: Path) -> None:
    """One JSON line per key: what was typed, what was on screen, when it appeared."""
    with path.open("w") as out:
        for item in run.shown:
            key = item.key
            out.write(json.dumps({
                "t": round(key.t, 3), "line": key.line, "character": key.character,
                "typed": key.edit[4], "expect": key.expect, "shown": item.text, "at": item.at,
            }) + "\n")


def _score_all(
    script: TypingScript,
    clients: list[str],
    dump: Path | None = None,
    label: str = "",
    extra: dict[str, Any] | None = None,
) -> dict[str, SessionScore]:
    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    model = ensure()
    scores = {}
    for name in clients:
        # scopecache's debug log beside its keys: each upstream request, its
        # source, status and seconds (``upstream request id=...``)
        log_file = None
        if dump is not None and name == "scopecache":
            log_file = dump / f"{label or 'session'}.{name}.log"
        run = asyncio.run(_session(script, model, name, extra, log_file))
        if dump is not None:
            _dump(run, dump / f"{label or 'session'}.{name}.jsonl")
        scores[name] = SessionScore.of(run)
    return scores


def measure(long: bool) -> dict[str, SessionScore]:
    """Each client's score on the same typing session, by client."""
    script = code_model_session("full" if long else "short")
    return _score_all(script, ["scopecache", "llama.vim"] + (["greedy"] if long else []))


@dataclass(frozen=True)
class Session:
    """Twelve lines of a sample file, typed back."""

    name: str
    source: str
    #: 0-based first line typed
    first: int
    count: int = 12

    def script(self) -> TypingScript:
        return sample_script(self.source, self.first, self.count)


#: the three sessions of ``--sessions``: different code, one of it predictable
SESSIONS = (
    Session("parser subcommands (predictable)", "lsp_server/samples/todo_cli.py", 92),
    Session("string reader loop", "lsp_server/samples/tokenizer.py", 55),
    Session("retry loop body", "lsp_server/samples/retry.py", 76),
)


def goals(ours: SessionScore, theirs: SessionScore) -> dict[str, bool]:
    """Which of the typing goals ``ours`` meets against the baseline ``theirs``."""
    return {
        "chars on the line >= 1.2x": ours.chars_saved_line >= 1.2 * theirs.chars_saved_line,
        "chars over lines >= 1x": ours.chars_saved_lines >= theirs.chars_saved_lines,
        "useful keys >= 1x": ours.useful_keys >= theirs.useful_keys,
        "wrong keys <= 1x": ours.wrong_keys <= theirs.wrong_keys,
        "server seconds <= 0.5x": ours.busy_seconds <= 0.5 * theirs.busy_seconds,
    }


def run_ours(
    sessions: tuple[Session, ...] = SESSIONS,
    extra: dict[str, Any] | None = None,
    runs: int = 1,
) -> list[dict[str, Any]]:
    """scopecache's side alone, ``runs`` times per session: one row per session, figure, run.

    For trying a setting (``extra``): the baseline's column does not depend
    on it, and runs of one client vary enough that several are needed.
    """
    figures = (
        ("keys with a useful suggestion on screen", "useful_keys", "keys"),
        ("keys with a wrong suggestion on screen", "wrong_keys", "keys"),
        ("characters Tab would have saved, first lines", "chars_saved_line", "chars"),
        ("server busy seconds", "busy_seconds", "s"),
        ("requests that reached the server", "requests", "n"),
    )
    rows: list[dict[str, Any]] = []
    for session in sessions:
        for number in range(1, runs + 1):
            ours = _score_all(session.script(), ["scopecache"], extra=extra)["scopecache"]
            rows += [row(f"{session.name}: {name}, run {number}", getattr(ours, field), None, unit)
                     for name, field, unit in figures]
    return rows


def run_sessions(
    sessions: tuple[Session, ...] = SESSIONS,
    dump: Path | None = None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every session's rows, then one row per session and goal (1 met, 0 not).

    With ``dump``, each client's keys go to ``DUMP/<session>.<client>.jsonl``
    and scopecache's debug log to ``DUMP/<session>.scopecache.log``;
    ``extra`` sets scopecache settings (dotted names) beyond the defaults.
    """
    rows: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    for session in sessions:
        label = Path(session.source).stem
        scores = _score_all(session.script(), ["scopecache", "llama.vim"], dump, label, extra)
        ours, theirs = scores["scopecache"], scores["llama.vim"]
        rows += [dict(r, name=f"{session.name}: {r['name']}")
                 for r in rows_against(ours, theirs, BASELINE)]
        verdicts += [row(f"{session.name}: goal {goal}", int(met), 1, "met")
                     for goal, met in goals(ours, theirs).items()]
    return rows + verdicts


def rows_against(ours: SessionScore, theirs: SessionScore, against: str) -> list[dict[str, Any]]:
    """The comparison's rows: scopecache's figure, the other client's, their ratio."""
    figures: list[tuple[str, str, str]] = [
        (f"keys with a suggestion on screen (of {ours.keys} keys)", "shown", "keys"),
        ("keys with a useful suggestion on screen", "useful_keys", "keys"),
        ("keys with a wrong suggestion on screen", "wrong_keys", "keys"),
        ("useful suggestions shown", "useful_suggestions", "suggestions"),
        ("characters Tab would have saved, first lines", "chars_saved_line", "chars"),
        ("characters Tab would have saved, over several lines", "chars_saved_lines", "chars"),
        ("new-suggestion latency p50", "new_latency_p50", "s"),
        ("new-suggestion latency p90", "new_latency_p90", "s"),
        ("server busy seconds", "busy_seconds", "s"),
        ("server seconds per useful suggestion", "seconds_per_useful", "s"),
        ("requests that reached the server", "requests", "n"),
    ]
    return [
        row(f"{name}, vs {against}", getattr(ours, field), getattr(theirs, field), unit)
        for name, field, unit in figures
    ]


def run(quick: bool = False, long: bool = False) -> list[dict[str, Any]]:
    """The benchmark rows (``quick`` changes nothing: the short session is already short)."""
    scores = measure(long)
    ours = scores.pop("scopecache")
    rows = rows_against(ours, scores["llama.vim"], BASELINE)
    if "greedy" in scores:
        rows += rows_against(ours, scores["greedy"], f"{BASELINE}, greedy")
    return rows


def main() -> None:
    from tests.bench.__main__ import table

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--long", action="store_true",
                       help="twelve lines and a greedy control row (default: six lines)")
    which.add_argument("--sessions", action="store_true",
                       help="three twelve-line sessions from different code, each checked "
                            "against the goals (default: off)")
    parser.add_argument("--dump", metavar="DIR", type=Path,
                        help="with --sessions: write every key of every client as JSON lines, "
                             "and scopecache's debug log, into DIR (default: none)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="with --sessions: a scopecache setting beyond the defaults, dotted, "
                             "the value as JSON, e.g. completion.minProbability=0.5 "
                             "(default: none)")
    parser.add_argument("--only", metavar="SESSION", type=int, action="append",
                        help="with --sessions: only session number SESSION (1-3; default: all)")
    parser.add_argument("--ours-only", action="store_true",
                        help="with --sessions: scopecache's side alone, no baseline and no "
                             "goals, for trying a setting (default: both sides)")
    parser.add_argument("--runs", type=int, default=1,
                        help="with --ours-only: runs of each session (default: 1)")
    args = parser.parse_args()
    if not args.sessions and (args.dump or args.set or args.only or args.ours_only):
        parser.error("--dump, --set, --only and --ours-only go with --sessions")
    if args.runs != 1 and not args.ours_only:
        parser.error("--runs goes with --ours-only")
    if args.runs < 1:
        parser.error("--runs takes a number of runs, at least 1")
    if args.ours_only and args.dump:
        parser.error("--dump writes both sides: leave out --ours-only")
    if args.only and not set(args.only) <= set(range(1, len(SESSIONS) + 1)):
        parser.error(f"--only takes a session number from 1 to {len(SESSIONS)}")
    if args.dump is not None:
        args.dump.mkdir(parents=True, exist_ok=True)
    if args.sessions:
        extra = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
        chosen = tuple(s for n, s in enumerate(SESSIONS, 1) if not args.only or n in args.only)
        if args.ours_only:
            rows = run_ours(chosen, extra=extra, runs=args.runs)
        else:
            rows = run_sessions(chosen, dump=args.dump, extra=extra)
    else:
        rows = run(long=args.long)
    print(table([dict(r, suite="slow_model") for r in rows]))


if __name__ == "__main__":
    main()
