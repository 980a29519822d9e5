"""llama.vim's inline completion, emulated: the peer the slow-model benchmark compares with.

ggml-org/llama.vim asks llama.cpp's ``/infill`` straight from the editor.
This module plays its fill-in-the-middle client on a typing session
(``tests.support.typing_session``) as ``autoload/llama.vim`` at commit
``LLAMA_VIM_COMMIT`` behaves with its default settings, in insert mode with
automatic completion on. Written from reading that file; none of its code.

At every cursor move (every key here) llama.vim does two things, in order:

1. it hides what it showed, and shows a cached answer for the new place:
   one asked with exactly this local context, or one asked up to 128
   characters earlier whose text starts with what was typed since (the
   rest of it is shown). Whenever something is shown this way it asks, at
   the same place, a *speculative* request: the local context as if the
   suggestion were accepted (``t_max_predict_ms`` 1000);
2. it asks for the new place: unless a request is still running (then it
   tries again 100 ms later, and again, always for the cursor's place at
   that moment; a newer try replaces the older), and unless the result
   cache already holds an answer for this local context or for it with its
   first one to three lines dropped ("already cached, don't ask"). This
   first request for a place is short: ``t_max_predict_ms`` 250.

A request is never cancelled. Its answer goes into the result cache (250
entries, least recently used out) under each of its context keys; if
nothing acceptable is on screen, what the cache holds for the cursor's
place is shown (step 1, with its speculative request; that request finds
the finished one still current and so goes by the 100 ms retry).

Before showing, llama.vim drops a suggestion that only repeats the text
after the cursor or the next lines, trims a blank line's indentation from
it, and shows nothing acceptable for whitespace. Its extra context (the
ring of chunks from yanks, other buffers and saves, sent as
``input_extra``) stays empty here: the session types into one file in
insert mode, where llama.vim moves no queued chunk into the ring while the
cursor moved within the last 3 s, and the far-prefix and suffix chunks it
picks on a long move lie outside this 119-line file.

The request is llama.vim's: 256 lines before the cursor line as
``input_prefix``, the cursor line's text before the cursor as ``prompt``,
the rest of it and 64 lines after as ``input_suffix``; ``n_predict`` 128,
``top_k`` 40, ``top_p`` 0.90, samplers ``top_k, top_p, infill``,
``cache_prompt``, ``t_max_prompt_ms`` 500, ``id_slot`` 0, ``n_indent`` the
line's indentation, and the ``model`` field it sends empty by default (its
empty bearer header, which llama.cpp ignores without an API key, is left
out: HTTP clients here refuse a header value ending in a space).
``greedy`` replaces the samplers with temperature 0 (the control row: the
strategy with scopecache's decoding).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.typing_session import (
    ClientRun,
    Key,
    ServerBusyMeter,
    Shown,
    TypingScript,
    at_time,
)

#: the llama.vim commit this emulation follows (autoload/llama.vim)
LLAMA_VIM_COMMIT = "a1c8e6e40cb45df59b78add5b65d575386832465"

#: llama.vim's defaults (``s:default_config``) and the constants of its FIM code
N_PREFIX = 256
N_SUFFIX = 64
N_PREDICT = 128
T_MAX_PROMPT_MS = 500
#: the speculative request's generation limit (``t_max_predict_ms``)
T_MAX_PREDICT_MS = 1000
#: the first request for a place: short, the speculative one follows
T_MAX_PREDICT_FIRST_MS = 250
TOP_K = 40
TOP_P = 0.90
SAMPLERS = ("top_k", "top_p", "infill")
#: no automatic request with more than this many characters after the cursor
MAX_LINE_SUFFIX = 8
#: the result cache's size
MAX_CACHE_KEYS = 250
#: seconds between tries while a request runs
RETRY_SECONDS = 0.1
#: characters back in which a cached answer is looked for
BACK_SEARCH = 128
#: context keys with the prefix's first 1..N lines dropped
PREFIX_TRIMS = 3
#: the separator llama.vim hashes between the text before and after the cursor
CURSOR_MARK = "\u00ce"

_FIRST_LINE = re.compile(r"^[^\n]*\n")


@dataclass(frozen=True)
class LocalContext:
    """The text around the cursor that one request sends."""

    prefix: str
    middle: str
    suffix: str
    indent: int
    #: the cursor line's text after the cursor
    line_suffix: str

    def keys(self) -> list[str]:
        """The result cache's keys for this context: whole, then with 1-3 prefix lines dropped."""
        found = [self.prefix + self.middle + CURSOR_MARK + self.suffix]
        prefix = self.prefix
        for _ in range(PREFIX_TRIMS):
            prefix = _FIRST_LINE.sub("", prefix, count=1)
            if not prefix:
                break
            found.append(prefix + self.middle + CURSOR_MARK + self.suffix)
        return found


def local_context(
    lines: list[str], line: int, character: int, accepted: list[str], indent_last: int
) -> LocalContext:
    """The local context at (line, character), or as if ``accepted`` were inserted there.

    Lines are 0-based. A blank cursor line is sent as empty (no prompt, no
    indentation), so the model writes the line from its start.
    """
    after = lines[line + 1 : line + 1 + N_SUFFIX]
    if not accepted:
        current = lines[line]
        before = lines[max(0, line - N_PREFIX) : line]
        if not current.strip():
            middle, line_suffix, indent = "", "", 0
        else:
            middle, line_suffix = current[:character], current[character:]
            indent = len(current) - len(current.lstrip())
    else:
        current = lines[line] + accepted[0] if len(accepted) == 1 else accepted[-1]
        before = lines[max(0, line - N_PREFIX + len(accepted) - 1) : line]
        if len(accepted) > 1:
            before = [*before, lines[line] + accepted[0], *accepted[1:-1]]
        middle, line_suffix, indent = current, "", indent_last
    return LocalContext(
        prefix="\n".join(before) + "\n",
        middle=middle,
        suffix=line_suffix + "\n" + "\n".join(after) + "\n",
        indent=indent,
        line_suffix=line_suffix,
    )


class ResultCache:
    """Answers by context key, least recently used out; a look-up counts as a use."""

    def __init__(self, size: int = MAX_CACHE_KEYS) -> None:
        self.size = size
        self._answers: OrderedDict[str, str] = OrderedDict()

    def get(self, key: str) -> str | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, key: str, answer: str) -> None:
        if len(self._answers) >= self.size:  # as llama.vim: even when the key is there
            self._answers.popitem(last=False)
        self._answers[key] = answer
        self._answers.move_to_end(key)

    def __len__(self) -> int:
        return len(self._answers)


@dataclass(frozen=True)
class Hint:
    """What is on screen: the suggestion's lines as shown, and whether Tab takes them."""

    lines: tuple[str, ...]
    acceptable: bool
    #: the cursor line's text after the cursor, appended to the last line
    line_suffix: str

    @property
    def text(self) -> str | None:
        """What Tab inserts at the cursor, ``None`` when nothing acceptable is shown."""
        if not self.acceptable:
            return None
        shown = "\n".join(self.lines)
        inserted = shown[: len(shown) - len(self.line_suffix)]
        return inserted or None


def hint_for(lines: list[str], line: int, character: int, content: str) -> Hint:
    """What llama.vim shows at (line, character) for an answer ``content``.

    It drops what only repeats the text after the cursor or the lines below,
    and a blank cursor line's indentation from the first line.
    """
    shown = content.split("\n")
    while shown and shown[-1] == "":
        shown.pop()
    acceptable = bool(shown)
    if not shown:
        shown = [""]
    current = lines[line]
    if not current.strip():
        lead = min(len(shown[0]) - len(shown[0].lstrip()), len(current))
        current, shown[0] = shown[0][:lead], shown[0][lead:]
    before, line_suffix = current[:character], current[character:]

    def line_at(index: int) -> str:
        return lines[index] if 0 <= index < len(lines) else ""

    below = lines[line + 1 : line + len(shown)]
    if len(shown) > 1 and shown[0] == "" and shown[1:] == below:
        shown = [""]
    if len(shown) == 1 and shown[0] == line_suffix:
        shown = [""]
    compared = line + 1
    while compared < len(lines) - 1 and not line_at(compared).strip():
        compared += 1
    if before + shown[0] == line_at(compared):
        if len(shown) == 1:
            shown = [""]
        elif len(shown) == 2:
            nxt = line_at(compared + 1)
            if shown[-1] == (nxt[: len(shown[-1])] if shown[-1] else nxt):
                shown = [""]
        elif shown[1:] == lines[compared + 1 : compared + len(shown)]:
            shown = [""]
    shown[-1] += line_suffix
    if all(not part.strip() for part in shown):
        acceptable = False
    return Hint(tuple(shown), acceptable, line_suffix)


#: sends one ``/infill`` body, returns the answer's ``content`` (``None``: no usable answer)
Post = Callable[[dict[str, Any]], Awaitable[str | None]]


def infill_body(
    context: LocalContext, *, speculative: bool, greedy: bool = False
) -> dict[str, Any]:
    """llama.vim's ``/infill`` request for ``context``."""
    sampling: dict[str, Any] = (
        {"temperature": 0.0}
        if greedy
        else {"top_k": TOP_K, "top_p": TOP_P, "samplers": list(SAMPLERS)}
    )
    return {
        "id_slot": 0,
        "input_prefix": context.prefix,
        "input_suffix": context.suffix,
        "input_extra": [],
        "prompt": context.middle,
        "n_predict": N_PREDICT,
        "stop": [],
        "n_indent": context.indent,
        **sampling,
        "stream": False,
        "cache_prompt": True,
        "t_max_prompt_ms": T_MAX_PROMPT_MS,
        "t_max_predict_ms": T_MAX_PREDICT_MS if speculative else T_MAX_PREDICT_FIRST_MS,
        "response_fields": ["content", "timings/prompt_n", "timings/predicted_n", "tokens_cached"],
        "model": "",
    }


class LlamaVimClient:
    """llama.vim's FIM client over one buffer; ``moved`` after every key.

    ``post`` sends a request body and returns the answer's content;
    ``clock`` gives the time a hint appeared (``time.perf_counter`` by default).
    """

    def __init__(
        self,
        text: str,
        post: Post,
        *,
        greedy: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.lines = text.split("\n")
        self.cursor = (0, 0)
        self.cache = ResultCache()
        self.hint: Hint | None = None
        #: when the hint on screen appeared
        self.hint_at = 0.0
        #: requests sent, and of those the speculative ones
        self.requests = 0
        self.speculative = 0
        self.finished = 0
        self.closed = False
        self._post = post
        self._greedy = greedy
        self._clock = clock
        self._job: asyncio.Task[None] | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._indent_last = -1

    def edit(self, change: tuple[int, int, int, int, str], line: int, character: int) -> None:
        """Apply one change to the buffer and put the cursor at (line, character)."""
        sl, sc, el, ec, text = change
        head, tail = self.lines[sl][:sc], self.lines[el][ec:]
        self.lines[sl : el + 1] = (head + text + tail).split("\n")
        self.cursor = (line, character)

    def moved(self) -> None:
        """The cursor moved in insert mode: show what the cache has here, then ask for here."""
        self.hint = None
        self._try_hint(*self.cursor)
        self._fim(None, [])

    async def close(self) -> None:
        """Ask nothing more; wait for the request still running (it is never cancelled)."""
        self.closed = True
        if self._retry is not None:
            self._retry.cancel()
        if self._job is not None:
            await asyncio.gather(self._job, return_exceptions=True)

    def _try_hint(self, line: int, character: int) -> None:
        context = local_context(self.lines, line, character, [], self._indent_last)
        answer = self.cache.get(context.keys()[0])
        if answer is None:
            answer = self._typed_into(context)
        if answer is None:
            return
        self.hint = hint_for(self.lines, line, character, answer)
        self.hint_at = self._clock()
        self._fim((line, character), list(self.hint.lines))

    def _typed_into(self, context: LocalContext) -> str | None:
        """The rest of an answer asked up to ``BACK_SEARCH`` characters back, if typed into."""
        typed = context.prefix + context.middle
        found: str | None = None
        longest = 0
        for back in range(1, min(BACK_SEARCH, len(typed)) + 1):
            answer = self.cache.get(typed[: len(typed) - back] + CURSOR_MARK + context.suffix)
            if answer is None or answer[:back] != typed[len(typed) - back :]:
                continue
            rest = answer[back:]
            if rest and found is None:
                found = rest
            elif len(rest) > longest:
                longest, found = len(rest), rest
        return found

    def _fim(self, place: tuple[int, int] | None, accepted: list[str]) -> None:
        """Ask for ``place`` (``None``: the cursor's place when it runs), or retry later."""
        if self.closed:
            return
        if self._job is not None:
            if self._retry is not None:
                self._retry.cancel()
            loop = asyncio.get_running_loop()
            self._retry = loop.call_later(RETRY_SECONDS, self._fim, place, accepted)
            return
        self._retry = None
        line, character = self.cursor if place is None else place
        context = local_context(self.lines, line, character, accepted, self._indent_last)
        if len(context.line_suffix) > MAX_LINE_SUFFIX:
            return
        keys = context.keys()
        if any(self.cache.get(key) is not None for key in keys):
            return
        self._indent_last = context.indent
        speculative = bool(accepted)
        body = infill_body(context, speculative=speculative, greedy=self._greedy)
        self.requests += 1
        self.speculative += speculative
        self._job = asyncio.ensure_future(self._ask(body, keys))

    async def _ask(self, body: dict[str, Any], keys: list[str]) -> None:
        try:
            answer = await self._post(body)
            self.finished += 1
            if answer is not None:
                for key in keys:
                    self.cache.put(key, answer)
                if self.hint is None or not self.hint.acceptable:
                    self._try_hint(*self.cursor)
        finally:
            self._job = None


async def run_llama_vim(script: TypingScript, url: str, *, greedy: bool = False) -> ClientRun:
    """Type the script into llama.vim's client against the llama.cpp server at ``url``.

    What is on screen just before each next key (one second after the last)
    is what the key showed.
    """
    run = ClientRun("llama.vim" + (" (greedy)" if greedy else ""))
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as http:

        async def post(body: dict[str, Any]) -> str | None:
            answer = await http.post("/infill", json=body)
            content = answer.json().get("content") if answer.status_code == 200 else None
            return content if isinstance(content, str) else None

        client = LlamaVimClient(script.text, post, greedy=greedy)
        started = time.perf_counter()
        with ServerBusyMeter(url) as meter:
            for index, key in enumerate(script.keys):
                await at_time(started, key.t)
                if index:
                    run.shown.append(_on_screen(client, script.keys[index - 1], started))
                client.edit(key.edit, key.line, key.character)
                client.moved()
            last = script.keys[-1]
            await at_time(started, last.t + 1.0)
            run.shown.append(_on_screen(client, last, started))
            await client.close()
            await asyncio.to_thread(meter.wait_idle)
        run.busy_seconds = meter.busy_seconds
    run.asked = run.requests = client.requests
    run.finished = client.finished
    run.extra = {"speculative": client.speculative}
    return run


def _on_screen(client: LlamaVimClient, key: Key, started: float) -> Shown:
    text = client.hint.text if client.hint is not None else None
    if text is None:
        return Shown(key, None)
    return Shown(key, text, max(0.0, client.hint_at - started - key.t))
