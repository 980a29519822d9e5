"""The text a miss sends upstream: a prompt window the server's KV cache can reuse.

llama.cpp (``cache_prompt``), vLLM (prefix caching) and Ollama reuse only the
longest common token prefix with the prompt they evaluated before. A window
that keeps "the last N characters before the cursor" moves its first line
every few dozen keystrokes, and every move makes the server evaluate the
whole prompt again. The ``anchored`` window instead starts at a line that
stays put while the user types:

* the start is the first line of a block of lines (line numbers that are
  multiples of the block size: a power of two, at most ``BLOCK_LINES`` and a
  quarter of the lines the budget holds) from which the text up to the cursor
  fits the budget (``prefixChars`` characters, ``prefixLines`` lines, and
  no more characters than the backend sends of a prefix: a longer one would
  be cut at its start in the backend's steps, not in these blocks);
* the start is remembered per document and kept while the text from it still
  fits and it is at most one block later than the ideal start (hysteresis:
  deleting a character after a jump does not jump back), so the window grows
  at its end keystroke after keystroke and moves forward by a whole block only
  when the budget forces it; a cursor that goes elsewhere in the file gets
  the ideal start of its own place, which is again the same on every return;
* the window is cut at line boundaries; a cursor line longer than the budget
  falls back to the last characters before the cursor.

The suffix is the one the cache key uses (from the cursor to the end of the
enclosing scope, ``suffixChars``/``suffixLines``): it does not change while
the user types at the end of a line. Where it goes after the prefix (the
prefix-suffix-middle layout of llama.cpp's ``/infill``), the server
re-evaluates all of it on every request: the typed characters are inserted
ahead of it, and a server reuses cached chunks only in the order they come
(llama.cpp's ``--cache-reuse`` skips cached tokens that were dropped, never
prompt tokens that were inserted). So the anchored window keeps that suffix
to ``psmSuffixChars`` characters, cut at the last line end within them
(the rest of the cursor's line always when it fits); the cut depends only
on the text after the cursor, so it stays put while the user types.

The other windows exist so that the benchmark can measure the designs other
clients use through the same server code path: ``sliding`` (this project's
previous prompt: the last ``prefixChars`` characters, which in a file larger
than the budget start mid-line and move with every keystroke), ``lines`` (llama.vscode:
256 lines before the cursor and 64 after, whole lines, no character budget)
and ``tokens`` (Continue: whole lines pruned from the top to a token budget,
an estimated ``(prefixChars + suffixChars) / 4`` tokens of which the suffix
takes at most a fifth).

Only a miss sends a prompt, so a keystroke answered from the cache should
not pay for one: the syntax context carries a ``DeferredPrompt`` that reads
the windows from the document the first time they are asked for. They must
be asked for before the document changes again; the completion pipeline
does that as soon as it knows a request goes upstream, before it waits for
anything. Asked for later, they raise ``StalePromptError`` rather than mix
two states of the text.
"""

from __future__ import annotations

import re
from typing import get_args

from lsp_server.documents.document import Document
from lsp_server.documents.positions import decode_text
from lsp_server.documents.syntax_reads import tail_text
from lsp_server.documents.windows import ContextWindows
from lsp_server.settings import PromptWindowKind

PROMPT_WINDOWS: tuple[str, ...] = get_args(PromptWindowKind)

#: the anchored window's start moves in steps of this many lines
BLOCK_LINES = 32
#: llama.vscode's defaults (``n_prefix``, ``n_suffix``)
LINES_BEFORE = 256
LINES_AFTER = 64
#: characters per token assumed by the ``tokens`` window's budget
CHARS_PER_TOKEN = 4
#: share of the ``tokens`` window's budget the suffix may take (Continue: 0.2)
TOKENS_SUFFIX_SHARE = 0.2

# About one token per identifier, number, punctuation mark or run of spaces.
_TOKEN = re.compile(r"\w+|[^\w\s]|\s+")


class StalePromptError(RuntimeError):
    """A deferred prompt was read after its document had changed."""


class DeferredPrompt:
    """The prompt windows at one cursor, read from the document when first asked for.

    ``prefix`` is the sliding window (the last ``prefix_chars`` characters
    from ``window_start`` to the cursor); ``prompt_prefix`` and
    ``prompt_suffix`` are what a miss sends (``prompt_window``). All three
    are read together, once, and only while the document has had no edit
    since the context was taken (``Document.edits``).
    """

    __slots__ = ("_doc", "_edits", "_line", "_offset", "_scope_suffix", "_texts",
                 "_window_start", "_windows")

    def __init__(
        self,
        doc: Document,
        offset: int,
        line: int,
        window_start: int,
        scope_suffix: str,
        windows: ContextWindows,
    ) -> None:
        self._doc = doc
        self._edits = doc.edits
        self._offset = offset
        self._line = line
        self._window_start = window_start
        self._scope_suffix = scope_suffix
        self._windows = windows
        self._texts: tuple[str, str, str] | None = None

    def __repr__(self) -> str:
        state = "read" if self.is_read else "not read"
        return f"DeferredPrompt({self._windows.prompt}, offset {self._offset}, {state})"

    @property
    def is_read(self) -> bool:
        """Whether the windows have been read from the document."""
        return self._texts is not None

    def texts(self, prefix_limit: int | None = None) -> tuple[str, str, str]:
        """The sliding prefix, the prompt's prefix and its suffix (read on first use).

        ``prefix_limit``: the most prefix characters the backend sends
        (``CompletionBackend.prompt_prefix_chars``), which the anchored
        window keeps within; it counts only for the first read.
        """
        if self._texts is None:
            doc = self._doc
            if doc.edits != self._edits:
                raise StalePromptError(
                    f"the prompt at offset {self._offset} of {doc.uri} was read after "
                    f"{doc.edits - self._edits} more edit(s)"
                )
            windows = self._windows
            sliding = tail_text(doc.buffer.data, self._window_start, self._offset,
                                windows.prefix_chars)
            prefix, suffix = prompt_window(
                doc, self._offset, self._line, kind=windows.prompt,
                scope_suffix=self._scope_suffix, sliding_prefix=sliding,
                prefix_chars=windows.prefix_chars, prefix_lines=windows.prefix_lines,
                suffix_chars=windows.suffix_chars,
                reevaluated_suffix_chars=windows.prompt_suffix_chars,
                prefix_limit=prefix_limit,
            )
            self._texts = (sliding, prefix, suffix)
        return self._texts


def block_size(prefix_lines: int, fitting_lines: int) -> int:
    """The anchored window's step: at most a quarter of the lines the budget holds.

    A power of two, so that the starts of a smaller step include those of a
    larger one and a budget holding a few lines more or less rarely moves the
    start; never more than ``BLOCK_LINES``.
    """
    quarter = max(1, min(BLOCK_LINES, prefix_lines // 4, fitting_lines // 4))
    return 1 << (quarter.bit_length() - 1)


def _snap_up(line: int, block: int) -> int:
    return -(-line // block) * block


def anchored_start(
    doc: Document, offset: int, line: int, prefix_chars: int, prefix_lines: int
) -> int | None:
    """The anchored window's first line for a cursor at ``offset`` on ``line``.

    None when not even the cursor's own line fits the budget. Updates the
    start remembered on ``doc``.
    """
    buf = doc.buffer
    # Characters never outnumber bytes, so a start within this many bytes fits.
    lo = max(0, offset - prefix_chars)
    earliest = buf.line_of(lo)
    if buf.line_start(earliest) < lo:
        earliest += 1
    earliest = max(earliest, line - prefix_lines)
    if earliest > line:
        return None
    block = block_size(prefix_lines, line - earliest)
    ideal = _snap_up(earliest, block)
    if ideal > line:
        # Very long lines: the budget holds less than a block.
        ideal = earliest
    kept = doc.prompt_anchor
    if kept is not None and earliest <= kept <= min(line, ideal + block):
        return kept
    doc.prompt_anchor = ideal
    return ideal


def prompt_window(
    doc: Document,
    offset: int,
    line: int,
    *,
    kind: PromptWindowKind,
    scope_suffix: str,
    sliding_prefix: str,
    prefix_chars: int,
    prefix_lines: int,
    suffix_chars: int,
    reevaluated_suffix_chars: int = 0,
    prefix_limit: int | None = None,
) -> tuple[str, str]:
    """The prefix and suffix to send upstream for a cursor at ``offset`` on ``line``.

    ``scope_suffix`` is the syntax context's suffix (the cache key's) and
    ``sliding_prefix`` its prefix window (the last ``prefix_chars``
    characters before the cursor). ``reevaluated_suffix_chars`` (0: no
    limit) caps the anchored window's suffix where the server re-evaluates
    it on every request. ``prefix_limit`` (None: none) is the most prefix
    characters the backend sends: the anchored window keeps within it, so
    that the backend never cuts its start (its cut moves in steps of its
    own, not in the window's blocks of lines). The other windows are the
    designs of other clients and keep their own budgets.
    """
    buf = doc.buffer
    data = buf.data
    if kind == "anchored":
        if prefix_limit is not None:
            prefix_chars = min(prefix_chars, prefix_limit)
        suffix = head_lines_within(scope_suffix, reevaluated_suffix_chars)
        start = anchored_start(doc, offset, line, prefix_chars, prefix_lines)
        if start is None:
            return tail_text(data, buf.line_start(line), offset, prefix_chars), suffix
        return decode_text(data[buf.line_start(start) : offset]), suffix
    if kind == "lines":
        first = max(0, line - LINES_BEFORE)
        last = min(buf.line_count - 1, line + LINES_AFTER)
        prefix = decode_text(data[buf.line_start(first) : offset])
        return prefix, decode_text(data[offset : buf.line_end(last)])
    if kind == "tokens":
        return _token_budget_window(doc, offset, line, prefix_chars, suffix_chars)
    return sliding_prefix, scope_suffix


def head_lines_within(text: str, limit: int) -> str:
    """The start of ``text`` up to its last line end within ``limit`` characters.

    The first line alone when it is longer (cut to ``limit``); all of
    ``text`` when it fits or ``limit`` is 0.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    if text[limit] == "\n":
        return text[:limit]
    end = text.rfind("\n", 0, limit)
    return text[: end + 1] if end >= 0 else text[:limit]


def estimate_tokens(text: str) -> int:
    """A rough token count of source text (one per word, symbol or space run)."""
    return sum(1 for _ in _TOKEN.finditer(text))


def _token_budget_window(
    doc: Document, offset: int, line: int, prefix_chars: int, suffix_chars: int
) -> tuple[str, str]:
    buf = doc.buffer
    data = buf.data
    budget = (prefix_chars + suffix_chars) // CHARS_PER_TOKEN
    suffix_budget = int(budget * TOKENS_SUFFIX_SHARE)
    # Suffix: whole lines from the cursor while they fit the suffix's share.
    suffix_parts: list[str] = []
    used = 0
    end = offset
    for n in range(line, buf.line_count):
        stop = buf.line_start(n + 1) if n + 1 < buf.line_count else len(data)
        piece = decode_text(data[end:stop])
        cost = estimate_tokens(piece)
        if used + cost > suffix_budget and suffix_parts:
            break
        suffix_parts.append(piece)
        used += cost
        end = stop
        if used >= suffix_budget:
            break
    prefix_budget = budget - used
    # Prefix: the cursor's line, then whole lines from the top pruned to fit.
    start = buf.line_start(line)
    used = estimate_tokens(decode_text(data[start:offset]))
    for n in range(line - 1, -1, -1):
        cost = estimate_tokens(decode_text(data[buf.line_start(n) : buf.line_start(n + 1)]))
        if used + cost > prefix_budget:
            break
        used += cost
        start = buf.line_start(n)
    return decode_text(data[start:offset]), "".join(suffix_parts)
