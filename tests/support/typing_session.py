"""A developer typing lines into an existing file, keystroke by keystroke, against a real model.

The session: some consecutive lines are cut from a real source file; the
developer types them back at a human pace (one change per key, the editor's
auto-indent after Enter), never accepting a suggestion. Two clients watch the
same keystrokes at the same times:

* ``ScopecacheClient``: the real ``scopecache serve`` process, driven as an
  editor drives it: after every change an ``inlineCompletion`` request, and
  the request still outstanding when the next key arrives is cancelled
  (``$/cancelRequest``), as VS Code and Neovim do;
* ``FinishingClient``: the strategy of ggml-org's llama.vim, straight to
  llama.cpp's ``/infill``: at most one request at a time, never cancelled;
  when it finishes and the text has moved on, it asks again for the newest
  state; a finished answer is shown while the typed text still agrees with
  it. Its prompt is llama.vim's: 256 lines before the cursor line, the cursor
  line's prefix as ``prompt``, the rest of the line and 64 lines after.

What counts (``SessionScore``): keys after which a suggestion was on screen
before the next key; of those, the useful ones (the suggestion's first line
is what the developer went on to type, or starts it); the characters Tab
would have saved (a developer who presses Tab whenever a useful suggestion
shows, accepting its first line); requests, cancelled and finished; and the
server's busy time (``ServerBusyMeter`` samples llama.cpp's ``/slots``),
per useful suggestion.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from lsprotocol import types

from lsp_server.kit.client import ServerProcess
from tests.support.llamacpp import LlamaCppServer

#: llama.vim's defaults for its /infill request
LLAMA_VIM_PREFIX_LINES = 256
LLAMA_VIM_SUFFIX_LINES = 64
LLAMA_VIM_N_PREDICT = 128
LLAMA_VIM_T_MAX_PROMPT_MS = 500
LLAMA_VIM_T_MAX_PREDICT_MS = 1000


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
    for text in cut:
        indent = text[: len(text) - len(text.lstrip())]
        body = text[len(indent) :]
        end = len(lines[first - 1]) if row == first - 1 else len(cut[row - first])
        t += gap(line_pause_ms)
        keys.append(Key(t, row + 1, len(indent), (row, end, row, end, "\n" + indent), body))
        row += 1
        t += gap(line_pause_ms / 2)
        for i, char in enumerate(body):
            col = len(indent) + i
            keys.append(Key(t, row, col + 1, (row, col, row, col, char), body[i + 1 :]))
            t += gap(key_ms)
    return TypingScript(uri=uri, text="\n".join(kept), final=source, keys=keys)


@dataclass
class Shown:
    """What the client showed after one key, before the next."""

    key: Key
    text: str | None


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
    """Non-empty, and its first line and what was typed next agree (one starts the other)."""
    if not text:
        return False
    head = first_line(text)
    return bool(head.strip()) and (head.startswith(expect) or expect.startswith(head))


def tab_savings(shown: list[Shown]) -> int:
    """Characters saved by a developer who presses Tab on every useful suggestion.

    Tab accepts the suggestion's first line; it saves characters only where
    that line is what the developer was about to type (``expect`` starts
    with it). The keys that typed those characters are then skipped.
    """
    saved = 0
    skip_until: tuple[int, int] = (-1, -1)
    for item in shown:
        key = item.key
        if (key.line, key.character) < skip_until and key.line == skip_until[0]:
            continue
        if item.text is None:
            continue
        head = first_line(item.text)
        if head and key.expect.startswith(head):
            saved += len(head)
            skip_until = (key.line, key.character + len(head))
    return saved


@dataclass(frozen=True)
class SessionScore:
    """The figures the slow-model comparison is about."""

    keys: int
    shown: int
    useful: int
    chars_saved: int
    requests: int
    cancelled: int
    finished: int
    busy_seconds: float

    @classmethod
    def of(cls, run: ClientRun) -> SessionScore:
        """Score one client's run."""
        return cls(
            keys=len(run.shown),
            shown=sum(1 for s in run.shown if s.text),
            useful=sum(1 for s in run.shown if useful(s.text, s.key.expect)),
            chars_saved=tab_savings(run.shown),
            requests=run.requests,
            cancelled=run.cancelled,
            finished=run.finished,
            busy_seconds=run.busy_seconds,
        )

    @property
    def seconds_per_useful(self) -> float:
        """Server busy seconds per useful suggestion (inf when none was useful)."""
        return self.busy_seconds / self.useful if self.useful else math.inf


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


async def _at(started: float, t: float) -> None:
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
    answers: dict[int, tuple[float, str | None]] = {}
    pending: list[tuple[str, asyncio.Task[None]]] = []

    logging = {"log_file": log_file, "log_level": "DEBUG"} if log_file else {}
    async with ServerProcess(settings, **logging) as server:
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
                await _at(started, key.t)
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
            await _at(started, script.keys[-1].t + 1.0)
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
        visible = arrived[1] if arrived is not None and arrived[0] <= deadline else None
        run.shown.append(Shown(key, visible))
    run.requests = int(stats.get("upstreamRequests", 0))
    run.cancelled = int(stats.get("upstreamCancelled", 0))
    run.finished = int(stats.get("upstreamCompleted", 0))
    run.extra = {"stats": stats}
    run.busy_seconds = meter.busy_seconds if meter is not None else 0.0
    return run


class _Buffer:
    """The finishing client's copy of the text."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")

    def apply(self, edit: tuple[int, int, int, int, str]) -> None:
        sl, sc, el, ec, text = edit
        head = self.lines[sl][:sc]
        tail = self.lines[el][ec:]
        self.lines[sl : el + 1] = (head + text + tail).split("\n")


def llama_vim_body(
    lines: list[str], line: int, character: int, *, greedy: bool = False
) -> dict[str, Any]:
    """llama.vim's ``/infill`` request for the cursor at (line, character).

    ``greedy`` replaces its sampler chain (top-k 40, top-p 0.99, then a random
    draw) with greedy decoding, as scopecache asks for (temperature 0).
    """
    cursor_line = lines[line]
    before = lines[max(0, line - LLAMA_VIM_PREFIX_LINES) : line]
    after = lines[line + 1 : line + 1 + LLAMA_VIM_SUFFIX_LINES]
    prefix = "".join(text + "\n" for text in before)
    middle = cursor_line[:character]
    suffix = cursor_line[character:] + "\n" + "".join(text + "\n" for text in after)
    sampling: dict[str, Any] = (
        {"temperature": 0.0}
        if greedy
        else {"top_k": 40, "top_p": 0.99, "samplers": ["top_k", "top_p", "infill"]}
    )
    return {
        **sampling,
        "input_prefix": prefix,
        "input_suffix": suffix,
        "input_extra": [],
        "prompt": middle,
        "n_predict": LLAMA_VIM_N_PREDICT,
        "stop": [],
        "n_indent": len(middle) - len(middle.lstrip()),
        "stream": False,
        "cache_prompt": True,
        "t_max_prompt_ms": LLAMA_VIM_T_MAX_PROMPT_MS,
        "t_max_predict_ms": LLAMA_VIM_T_MAX_PREDICT_MS,
    }


async def run_finishing(script: TypingScript, url: str, *, greedy: bool = False) -> ClientRun:
    """Type the script with llama.vim's strategy: one request at a time, never cancelled."""
    run = ClientRun("finish-every-request" + (" (greedy)" if greedy else ""))
    buffer = _Buffer(script.text)
    #: the answers so far: (line, line prefix when asked, answer text)
    answers: list[tuple[int, str, str]] = []
    state: dict[str, Any] = {"cursor": None, "busy": False}
    done = asyncio.Event()

    async with httpx.AsyncClient(base_url=url, timeout=120.0) as client:

        async def request_loop() -> None:
            while True:
                cursor = state["cursor"]
                asked = (cursor, buffer.lines[cursor[0]][: cursor[1]])
                body = llama_vim_body(buffer.lines, *cursor, greedy=greedy)
                run.asked += 1
                run.requests += 1
                answer = await client.post("/infill", json=body)
                run.finished += 1
                content = answer.json().get("content", "")
                answers.append((asked[0][0], asked[1], content))
                if state["cursor"] == cursor and not state["changed"]:
                    state["busy"] = False
                    done.set()
                    return
                state["changed"] = False

        def visible(line: int, character: int) -> str | None:
            prefix = buffer.lines[line][:character]
            for asked_line, asked_prefix, content in reversed(answers):
                if asked_line != line or not prefix.startswith(asked_prefix):
                    continue
                typed = prefix[len(asked_prefix) :]
                if content.startswith(typed) and len(content) > len(typed):
                    return content[len(typed) :]
            return None

        started = time.perf_counter()
        loops: list[asyncio.Task[None]] = []
        with ServerBusyMeter(url) as meter:
            for index, key in enumerate(script.keys):
                await _at(started, key.t)
                buffer.apply(key.edit)
                state["cursor"] = (key.line, key.character)
                if state["busy"]:
                    state["changed"] = True
                else:
                    state["busy"], state["changed"] = True, False
                    done.clear()
                    loops.append(asyncio.ensure_future(request_loop()))
                next_t = script.keys[index + 1].t if index + 1 < len(script.keys) else key.t + 1
                await _at(started, next_t - 0.001)
                run.shown.append(Shown(key, visible(key.line, key.character)))
            await asyncio.gather(*loops)
            await asyncio.to_thread(meter.wait_idle)
        run.busy_seconds = meter.busy_seconds
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
    root = Path(__file__).resolve().parents[2]
    first, count = SESSION_LINES[size]
    return typing_script((root / SESSION_SOURCE).read_text(), first, count)


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


def scopecache_settings(endpoint: str) -> dict[str, Any]:
    """Only the endpoint and the model, as a user sets it up (no shared L2 between runs)."""
    return {"endpoint": endpoint, "model": "qwen2.5-coder-0.5b", "cache": {"l2": "none"}}
