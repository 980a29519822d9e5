"""A developer typing lines into an existing file, keystroke by keystroke, against a real model.

The session: some consecutive lines are cut from a real source file; the
developer types them back at a human pace (one change per key, the editor's
auto-indent after Enter), never accepting a suggestion. Clients watch the
same keystrokes at the same times: here the real ``scopecache serve``
process (``run_scopecache``), driven as an editor drives it: after every
change an ``inlineCompletion`` request, and the request still outstanding
when the next key arrives is cancelled (``$/cancelRequest``), as VS Code and
Neovim do; llama.vim's client, the peer, is ``tests.support.llama_vim``.

What counts (``SessionScore``), keys and suggestions apart (a suggestion on
screen while it is typed through is one suggestion, one key per character):
keys after which a suggestion was on screen before the next key, the useful
and the wrong ones (useful: its first line is what the developer went on to
type on the line, or starts it); suggestions that appeared, the useful
ones, and the seconds from a key to a new suggestion (p50, p90); the
characters Tab would have saved, accepting first lines only and accepting
whole suggestions over several lines where all of one is right; requests,
cancelled and finished; and the server's busy time (``ServerBusyMeter``
samples llama.cpp's ``/slots``).
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from lsprotocol import types

from lsp_server.kit.client import ServerProcess
from lsp_server.observe.stats import percentile
from tests.support.llamacpp import LlamaCppServer


@dataclass(frozen=True)
class Key:
    """One keystroke: when, what it changes, where the cursor is after it, what follows."""

    t: float
    line: int
    character: int
    #: the change, as (start line, start char, end line, end char, text)
    edit: tuple[int, int, int, int, str]
    #: what the developer goes on to type on this line after this key
    expect: str
    #: what the developer goes on to type from here to the session's end, as
    #: it lands in the file (this line's rest, then each later line whole)
    ahead: str = ""


@dataclass
class TypingScript:
    """The file with the lines cut out, and the keys that type them back."""

    uri: str
    text: str
    final: str
    keys: list[Key]

    @property
    def duration(self) -> float:
        """Seconds from the first key to the last."""
        return self.keys[-1].t - self.keys[0].t if self.keys else 0.0


def typing_script(
    source: str,
    first: int,
    count: int,
    *,
    uri: str = "file:///project/todo_cli.py",
    seed: int = 7,
    key_ms: float = 110.0,
    line_pause_ms: float = 600.0,
    speed: float = 1.0,
) -> TypingScript:
    """Cut lines ``first .. first+count-1`` (0-based) of ``source`` and type them back.

    Key gaps are log-normal around ``key_ms``; a line's end, Enter and the
    first character after the indentation take ``line_pause_ms``-ish pauses;
    ``speed`` divides every gap. The cursor starts at the end of the line
    before the cut; each line starts with Enter (which brings the indentation).
    """
    lines = source.split("\n")
    cut = lines[first : first + count]
    kept = lines[:first] + lines[first + count :]
    rng = random.Random(seed)

    def gap(median_ms: float) -> float:
        sample = math.exp(rng.gauss(math.log(median_ms), 0.35))
        return max(0.035, min(3 * median_ms, sample) / 1000.0) / speed

    keys: list[Key] = []
    t = 0.5
    row = first - 1
    for number, text in enumerate(cut):
        indent = text[: len(text) - len(text.lstrip())]
        body = text[len(indent) :]
        later = "".join("\n" + line for line in cut[number + 1 :])
        end = len(lines[first - 1]) if row == first - 1 else len(cut[row - first])
        t += gap(line_pause_ms)
        enter = (row, end, row, end, "\n" + indent)
        keys.append(Key(t, row + 1, len(indent), enter, body, body + later))
        row += 1
        t += gap(line_pause_ms / 2)
        for i, char in enumerate(body):
            col = len(indent) + i
            rest = body[i + 1 :]
            keys.append(Key(t, row, col + 1, (row, col, row, col, char), rest, rest + later))
            t += gap(key_ms)
    return TypingScript(uri=uri, text="\n".join(kept), final=source, keys=keys)


@dataclass
class Shown:
    """What the client showed after one key, before the next.

    ``text`` is what Tab would insert at the cursor; ``at`` the seconds
    from the key to the moment it appeared (0 when the key's own handling
    showed it; ``None`` when nothing was shown).
    """

    key: Key
    text: str | None
    at: float | None = None


@dataclass
class ClientRun:
    """One client's session: what it showed, what it asked, what the server spent."""

    name: str
    shown: list[Shown] = field(default_factory=list)
    #: completion requests the editor sent (scopecache: one per key)
    asked: int = 0
    #: requests that reached the model's server
    requests: int = 0
    cancelled: int = 0
    finished: int = 0
    busy_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def first_line(text: str) -> str:
    """A suggestion's first line."""
    return text.split("\n", 1)[0]


def useful(text: str | None, expect: str) -> bool:
    """Its first line is not blank and agrees with what is typed next on the line.

    It agrees when it is the start of what is typed next, or goes on past
    it; at the end of the line (nothing left to type there) only a first line
    that is empty could agree, so nothing there is useful on the line.
    """
    if not text:
        return False
    head = first_line(text)
    if not head.strip():
        return False
    return expect.startswith(head) or (bool(expect) and head.startswith(expect))


def continues(before: Shown | None, item: Shown) -> bool:
    """Whether ``item`` shows the suggestion ``before`` showed, typed through by its key.

    The key typed the suggestion's first characters and the rest is still on
    screen: the same suggestion, not a new one.
    """
    if before is None or not before.text or not item.text:
        return False
    typed = item.key.edit[4]
    return before.text == typed + item.text


def new_suggestions(shown: list[Shown]) -> list[Shown]:
    """The keys at which a suggestion appeared that was not the previous one typed through."""
    found: list[Shown] = []
    before: Shown | None = None
    for item in shown:
        if item.text and not continues(before, item):
            found.append(item)
        before = item
    return found


def _end_of(key: Key, text: str) -> tuple[int, int]:
    """Where the cursor lands after ``text`` is inserted at ``key``'s cursor."""
    lines = text.split("\n")
    if len(lines) == 1:
        return key.line, key.character + len(text)
    return key.line + len(lines) - 1, len(lines[-1])


def tab_savings(shown: list[Shown], *, several_lines: bool = False) -> int:
    """Characters saved by a developer who presses Tab whenever what is shown is right.

    On the line (the default), Tab accepts the suggestion's first line, and
    only where that line is what the developer was about to type on this line
    (``expect`` starts with it). Over several lines, Tab accepts the whole
    suggestion where all of it is what the developer was about to type
    (``ahead`` starts with it), and the first line where only that is right.
    The keys that typed the accepted characters are then skipped: what they
    showed was never seen.
    """
    saved = 0
    skip_until = (-1, -1)
    for item in shown:
        key = item.key
        if (key.line, key.character) < skip_until or not item.text:
            continue
        accepted = ""
        if several_lines and key.ahead.startswith(item.text):
            accepted = item.text
        else:
            head = first_line(item.text)
            if key.expect.startswith(head):
                accepted = head
        if accepted:
            saved += len(accepted)
            skip_until = _end_of(key, accepted)
    return saved


@dataclass(frozen=True)
class SessionScore:
    """The figures the slow-model comparison is about.

    Keys and suggestions are counted apart: a suggestion that stays on screen
    while it is typed through is one suggestion but one key per character.
    """

    keys: int
    #: keys after which a suggestion was on screen before the next key
    shown: int
    #: of those, keys whose suggestion was useful (``useful``)
    useful_keys: int
    #: suggestions that appeared (not the one before, typed through)
    suggestions: int
    #: of those, the useful ones, judged at the key they appeared at
    useful_suggestions: int
    #: characters Tab would have saved accepting first lines only
    chars_saved_line: int
    #: characters Tab would have saved accepting whole suggestions where right
    chars_saved_lines: int
    #: seconds from a key to the appearance of a new suggestion: median, 90th
    new_latency_p50: float | None
    new_latency_p90: float | None
    requests: int
    cancelled: int
    finished: int
    busy_seconds: float

    @classmethod
    def of(cls, run: ClientRun) -> SessionScore:
        """Score one client's run."""
        appeared = new_suggestions(run.shown)
        latencies = [item.at for item in appeared if item.at is not None]
        return cls(
            keys=len(run.shown),
            shown=sum(1 for s in run.shown if s.text),
            useful_keys=sum(1 for s in run.shown if useful(s.text, s.key.expect)),
            suggestions=len(appeared),
            useful_suggestions=sum(1 for s in appeared if useful(s.text, s.key.expect)),
            chars_saved_line=tab_savings(run.shown),
            chars_saved_lines=tab_savings(run.shown, several_lines=True),
            new_latency_p50=percentile(latencies, 50) if latencies else None,
            new_latency_p90=percentile(latencies, 90) if latencies else None,
            requests=run.requests,
            cancelled=run.cancelled,
            finished=run.finished,
            busy_seconds=run.busy_seconds,
        )

    @property
    def wrong_keys(self) -> int:
        """Keys after which a suggestion that was not useful was on screen."""
        return self.shown - self.useful_keys

    @property
    def seconds_per_useful(self) -> float | None:
        """Server busy seconds per useful suggestion (``None`` when none was useful)."""
        if not self.useful_suggestions:
            return None
        return self.busy_seconds / self.useful_suggestions


class ServerBusyMeter:
    """Samples llama.cpp's ``/slots`` in a thread: seconds during which a slot was processing."""

    def __init__(self, url: str, *, interval: float = 0.02) -> None:
        self.url = url
        self.interval = interval
        self.busy_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ServerBusyMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def busy(self, client: httpx.Client) -> bool:
        """Whether any slot is processing now."""
        slots = client.get(f"{self.url}/slots").json()
        return any(slot.get("is_processing") for slot in slots)

    def _run(self) -> None:
        with httpx.Client(timeout=5.0) as client:
            last = time.perf_counter()
            while not self._stop.is_set():
                busy = self.busy(client)
                now = time.perf_counter()
                if busy:
                    self.busy_seconds += now - last
                last = now
                self._stop.wait(self.interval)

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Block until no slot processes (a cancelled prompt still runs to its end)."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=5.0) as client:
            while self.busy(client):
                if time.monotonic() > deadline:
                    raise TimeoutError("llama.cpp still busy")
                self._stop.wait(self.interval)


async def at_time(started: float, t: float) -> None:
    """Sleep until ``t`` seconds after ``started`` (the session's clock)."""
    delay = started + t - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)


async def run_scopecache(
    script: TypingScript,
    settings: dict[str, Any],
    *,
    busy_url: str | None = None,
    log_file: str | None = None,
) -> ClientRun:
    """Type the script into a real server process, asking after every key as an editor does."""
    run = ClientRun("scopecache")
    logging: dict[str, Any] = {"log_file": log_file, "log_level": "DEBUG"} if log_file else {}
    # A cache directory of the run's own: what an earlier run's server learnt
    # (the SQLite L2, the kept record) must not move this run's bar or pacing.
    with tempfile.TemporaryDirectory(prefix="scopecache-run-cache-") as cache_home:
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        async with ServerProcess(settings, env=env, **logging) as server:
            return await _type_into(server, script, run, busy_url)


async def _type_into(
    server: ServerProcess, script: TypingScript, run: ClientRun, busy_url: str | None
) -> ClientRun:
    """Type ``script`` into ``server`` key by key, asking after every key."""
    answers: dict[int, tuple[float, str | None]] = {}
    pending: list[tuple[str, asyncio.Task[None]]] = []
    server.open(script.uri, script.text, "python")

    async def ask(index: int, future: asyncio.Future[Any]) -> None:
        try:
            answer = await future
        except BaseException:  # cancelled by the next key, or an error answer
            return
        items = list(getattr(answer, "items", None) or [])
        text = items[0].insert_text if items else None
        answers[index] = (time.perf_counter(), text if isinstance(text, str) else None)

    meter = ServerBusyMeter(busy_url) if busy_url else None
    if meter is not None:
        meter.__enter__()
    started = time.perf_counter()
    try:
        for index, key in enumerate(script.keys):
            await at_time(started, key.t)
            for msg_id, task in pending:
                if not task.done():
                    server.cancel(msg_id)
            pending = [(m, t) for m, t in pending if not t.done()]
            sl, sc, el, ec, text = key.edit
            server.change(script.uri, [{
                "range": {"start": {"line": sl, "character": sc},
                          "end": {"line": el, "character": ec}},
                "text": text,
            }])
            params = server.inline_params(script.uri, key.line, key.character)
            msg_id, future = server.request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params)
            pending.append((msg_id, asyncio.ensure_future(ask(index, future))))
            run.asked += 1
        await at_time(started, script.keys[-1].t + 1.0)
        for msg_id, task in pending:
            if not task.done():
                server.cancel(msg_id)
        await asyncio.gather(*(t for _, t in pending), return_exceptions=True)
        stats = await server.stats()
        if meter is not None:
            await asyncio.to_thread(meter.wait_idle)
    finally:
        if meter is not None:
            meter.__exit__()
    for index, key in enumerate(script.keys):
        deadline = started + (
            script.keys[index + 1].t if index + 1 < len(script.keys) else key.t + 1.0
        )
        arrived = answers.get(index)
        if arrived is not None and arrived[0] <= deadline and arrived[1]:
            run.shown.append(Shown(key, arrived[1], max(0.0, arrived[0] - started - key.t)))
        else:
            run.shown.append(Shown(key, None))
    run.requests = int(stats.get("upstreamRequests", 0))
    run.cancelled = int(stats.get("upstreamCancelled", 0))
    run.finished = int(stats.get("upstreamCompleted", 0))
    run.extra = {"stats": stats}
    run.busy_seconds = meter.busy_seconds if meter is not None else 0.0
    return run


#: the real file the session types into: a command-line tool's argument parser
SESSION_SOURCE = "lsp_server/samples/todo_cli.py"
#: the lines it types back (0-based first line, count): the parser's subcommands
SESSION_LINES = {"full": (92, 12), "short": (98, 6)}


def code_model_session(size: str = "full") -> TypingScript:
    """The typing session of the slow-model test and benchmark.

    ``full`` types the twelve lines of ``build_parser``'s subcommands (about
    600 keys, 80 s); ``short`` the last six of them (about 300 keys, 40 s).
    """
    first, count = SESSION_LINES[size]
    return sample_script(SESSION_SOURCE, first, count)


def sample_script(source: str, first: int, count: int) -> TypingScript:
    """Lines ``first .. first+count-1`` (0-based) of the repository file ``source``, typed back."""
    path = Path(__file__).resolve().parents[2] / source
    return typing_script(path.read_text(), first, count, uri=f"file:///project/{path.name}")


def code_model_server(workdir: Path, model: Path, *, threads: int = 0) -> LlamaCppServer:
    """llama.cpp as a self-hosted user runs it on a laptop-class CPU.

    ``threads`` threads, by default two (``SCOPECACHE_MODEL_THREADS``
    overrides); on a machine busy with other work llama.cpp's threads wait
    for each other, measured up to ten times slower than one thread.
    ``-b 1024 -ub 1024`` and ``--cache-reuse 256`` as llama.cpp recommends
    for code completion, one slot.
    """
    threads = threads or int(os.environ.get("SCOPECACHE_MODEL_THREADS", "2"))
    return LlamaCppServer(
        workdir, model=model, threads=threads, batch=1024, cache_reuse=256, slots=1, context=4096
    )


def with_settings(base: dict[str, Any], dotted: dict[str, Any]) -> dict[str, Any]:
    """``base`` with the dotted settings of ``dotted`` (``{"completion.runOn": True}``) set."""
    out = dict(base)
    for name, value in dotted.items():
        node = out
        *parents, leaf = name.split(".")
        for part in parents:
            child = dict(node.get(part, {}))
            node[part] = child
            node = child
        node[leaf] = value
    return out


def scopecache_settings(endpoint: str) -> dict[str, Any]:
    """Only the endpoint and the model, as a user sets it up (no shared L2 between runs)."""
    return {"endpoint": endpoint, "model": "qwen2.5-coder-0.5b", "cache": {"l2": "none"}}
