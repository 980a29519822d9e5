"""When a cache miss may go upstream. Hits never come here.

The rule (delays bounded by ``throttle.minDelayMs`` and ``throttle.maxDelayMs``
on a fast service, by ``throttle.maxPauseMs`` on a slow one):

* a miss on a line the user has just started (the last change inserted a line
  break: Enter, with the editor's indentation) goes at once when
  ``throttle.lineStartImmediate`` is on: the user is waiting there;
* more indentation typed by hand cannot change the answer (the answer for the
  shorter indentation serves it by typed-through): such a miss waits for a
  pause in the typing, like any miss on a slow service;
* on a *slow* service (its smoothed answer time, request to first line, is
  longer than the user's smoothed gap between keys) a miss waits for a pause
  while a stream is at the service: ``clamp(maxDelayMs, maxPauseMs, 2 *
  typing)``. A request per keystroke there is one nobody sees: the next key
  arrives first. A local server with nothing at it (``service_idle``, as
  the pipeline decides it) is asked as a fast one would be: the newest
  state goes at once, as llama.vim asks it as soon as its last request
  ends. Waiting for a pause there left the server idle while the user typed
  on; the model, once it has seen a line start, often finishes the line,
  and its stream lives on while the typing agrees with it
  (``lsp_server.completion.inflight``);
* on a slow service, a miss inside the first word of a line (only indentation
  and word characters before the cursor) waits for a pause even when the
  server is idle (``throttle.firstWordWaits``): from a letter or two the
  model rarely guesses the line, and the next keys arrive before its answer,
  which is then thrown away after the server evaluated the whole prompt;
* any other miss waits ``clamp(min, max, min(typing / 2, full_answer / 4))``
  where ``typing`` is the smoothed interval between the user's keystrokes in
  that document and ``full_answer`` the service's smoothed time from request
  to the end of its answer.

Where the developer keeps little of what is shown (``pacing``, from
``lsp_server.completion.kept_bar``) every such wait is stretched, up to
twice; where they keep much it shrinks, down to three quarters. A line
start just entered is never delayed.

A fast typist's intermediate keystrokes are thus skipped (their requests are
cancelled by the editor while they wait), while a slow typist or a fast
service gets a request almost at once. The wait is an ``asyncio.sleep``, so
``$/cancelRequest`` ends it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: smoothing factor of the exponential moving averages
EWMA_WEIGHT = 0.3
#: intervals longer than this are pauses, not typing
MAX_TYPING_INTERVAL = 1.0
#: intervals shorter than this are bursts (a paste, a macro, auto-pairs), not typing
MIN_TYPING_INTERVAL = 0.03
#: a pause is this many typical gaps between keys
PAUSE_GAPS = 2.0


class MissThrottle:
    """Adaptive wait before a miss is sent upstream."""

    def __init__(
        self,
        *,
        min_delay: float = 0.015,
        max_delay: float = 0.120,
        max_pause: float = 0.6,
        line_start_immediate: bool = True,
        first_word_waits: bool = True,
        clock: Callable[[], float] = time.monotonic,
        pacing: Callable[[str], float] | None = None,
    ) -> None:
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.max_pause = max_pause
        self.line_start_immediate = line_start_immediate
        self.first_word_waits = first_word_waits
        self._clock = clock
        #: how many times its usual wait a miss in a document waits (what the
        #: developer kept there: ``lsp_server.completion.kept_bar``); None: 1
        self.pacing = pacing
        self._last_key: dict[str, float] = {}
        #: documents whose last change inserted a line break
        self._new_line: set[str] = set()
        self._typing: float | None = None
        #: smoothed time from request to the stream's end (its whole answer)
        self._full_answer: float | None = None
        #: smoothed time from request to the first line shown
        self._answer: float | None = None

    def note_keystroke(self, uri: str, *, new_line: bool = False) -> None:
        """Record a change in ``uri`` (updates the typing-speed estimate).

        ``new_line``: the change inserted a line break (Enter).
        """
        now = self._clock()
        last = self._last_key.get(uri)
        self._last_key[uri] = now
        if new_line:
            self._new_line.add(uri)
        else:
            self._new_line.discard(uri)
        if last is not None and MIN_TYPING_INTERVAL <= now - last < MAX_TYPING_INTERVAL:
            self._typing = _ewma(self._typing, now - last)

    def note_full_answer(self, seconds: float) -> None:
        """Record the time an upstream stream took from request to its end.

        Not the time to first token (Prometheus ``upstream_ttft_seconds``
        measures that): the whole answer, as the in-flight grace needs it.
        """
        self._full_answer = _ewma(self._full_answer, seconds)

    def note_answer(self, seconds: float) -> None:
        """Record an upstream answer time: request sent to first line shown."""
        self._answer = _ewma(self._answer, seconds)

    @property
    def full_answer(self) -> float | None:
        """The smoothed time from request to a stream's end, once one was seen."""
        return self._full_answer

    @property
    def typing(self) -> float | None:
        """The smoothed gap between keystrokes, once two were seen."""
        return self._typing

    @property
    def answer(self) -> float | None:
        """The smoothed time to an upstream answer's first line, once one was seen."""
        return self._answer

    @property
    def slow(self) -> bool:
        """The service answers slower than the user types (both measured)."""
        return (
            self.max_pause > 0
            and self._answer is not None
            and self._typing is not None
            and self._answer > self._typing
        )

    def forget(self, uri: str) -> None:
        """Drop per-document state (document closed)."""
        self._last_key.pop(uri, None)
        self._new_line.discard(uri)

    def delay_for(
        self,
        *,
        at_line_start: bool,
        uri: str | None = None,
        indentation: bool = False,
        service_idle: bool = False,
        first_word: bool = False,
    ) -> float:
        """Seconds a miss waits before going upstream.

        ``uri`` names the document (whether its last change started a line);
        ``indentation``: only whitespace is before the cursor on its line;
        ``service_idle``: the service may be asked without waiting for a
        pause (an idle local server); ``first_word``: the cursor is inside
        the first word of its line (``in_first_word``). Without ``uri``, a
        miss at a line start counts as just after Enter.
        """
        just_entered = uri is None or uri in self._new_line
        if at_line_start and just_entered and self.line_start_immediate:
            return 0.0
        pace = self.pacing(uri) if self.pacing is not None and uri is not None else 1.0
        may_go_now = service_idle and not (first_word and self.first_word_waits)
        busy_and_slow = self.slow and not may_go_now
        if busy_and_slow or (indentation and not just_entered and self.max_pause > 0):
            return self.pause() * pace
        candidates = [self.max_delay]
        if self._typing is not None:
            candidates.append(self._typing / 2)
        if self._full_answer is not None:
            candidates.append(self._full_answer / 4)
        return max(self.min_delay, min(candidates)) * pace

    def pause(self) -> float:
        """How long without a keystroke counts as a pause."""
        typing = self._typing if self._typing is not None else self.max_delay
        return min(self.max_pause, max(self.max_delay, PAUSE_GAPS * typing))

    async def wait(
        self,
        *,
        at_line_start: bool,
        uri: str | None = None,
        indentation: bool = False,
        service_idle: bool = False,
        first_word: bool = False,
    ) -> None:
        """Wait as the rule says (cancellable)."""
        delay = self.delay_for(
            at_line_start=at_line_start, uri=uri, indentation=indentation,
            service_idle=service_idle, first_word=first_word,
        )  # fmt: skip
        if delay > 0:
            await asyncio.sleep(delay)


def in_first_word(line_prefix: str) -> bool:
    """Whether the cursor is inside the first word of its line.

    Only indentation and word characters (an identifier's) are before it:
    ``    ret``, not ``    return x`` nor ``    self.``.
    """
    word = line_prefix.lstrip()
    return word.isidentifier()


def _ewma(previous: float | None, sample: float) -> float:
    if previous is None:
        return sample
    return previous + EWMA_WEIGHT * (sample - previous)
