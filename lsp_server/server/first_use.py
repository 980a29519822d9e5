"""Paying the server's first-use costs at ``initialized``, not on the first keystroke.

The first completion after start-up used to cost three to four warm ones,
although the connection was already open. The extra milliseconds were
one-time work in this process, done lazily on the user's first request:

* cattrs generates (and ``compile``s) a structuring function per LSP type the
  first time it meets it: ~1.5 ms for an ``inlineCompletion`` request and
  ~2 ms for unstructuring its answer (range, command, arguments);
* the ``exclude`` globs are compiled to regular expressions on first match
  (~1 ms for the default list).

``rehearse_protocol`` runs a sample request and answer of each completion
method through the protocol's own converter (nothing is sent);
``rehearse_exclusion`` compiles the globs. Both are cheap, local and never
reach the completion service. ``rehearse_client`` does the same for the
test and benchmark driver's client.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

from lsprotocol import types
from pygls.protocol import JsonRPCResponseMessage

from lsp_server.documents.exclude import is_excluded

logger = logging.getLogger(__name__)

#: an URI no pattern is meant to match: compiling the globs is the point
_REHEARSAL_URI = "file:///scopecache/first-use/rehearsal.py"

#: cattrs settles only on the second pass (some functions are generated twice)
REHEARSALS = 2

_POSITION = {"line": 1, "character": 4}
_TEXT_DOCUMENT = {"uri": _REHEARSAL_URI}


def _command() -> types.Command:
    return types.Command(title="Accept", command="scopecache.accepted", arguments=["s0", {}])


def _inline_answer() -> dict[str, Any]:
    # The inline handler answers in JSON form (``handlers.inline.completion_list``).
    cursor = {"line": 1, "character": 4}
    command = {"title": "Accept", "command": "scopecache.accepted", "arguments": ["s0", {}]}
    item = {"insertText": "pass", "range": {"start": cursor, "end": cursor}, "command": command}
    return {"items": [item]}


def _list_answer() -> types.CompletionList:
    cursor = types.Position(line=1, character=4)
    item = types.CompletionItem(
        label="pass",
        kind=types.CompletionItemKind.Text,
        detail="scopecache (upstream)",
        filter_text="pass",
        text_edit=types.TextEdit(range=types.Range(start=cursor, end=cursor), new_text="pass"),
        insert_text_format=types.InsertTextFormat.PlainText,
        command=_command(),
        sort_text="0",
    )
    return types.CompletionList(is_incomplete=True, items=[item])


def samples() -> list[tuple[str, dict[str, Any], Any]]:
    """``(method, params, answer)`` of each request a keystroke may bring."""
    return [
        (
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            {
                "textDocument": _TEXT_DOCUMENT,
                "position": _POSITION,
                "context": {"triggerKind": 2},
            },
            _inline_answer(),
        ),
        (
            types.TEXT_DOCUMENT_COMPLETION,
            {"textDocument": _TEXT_DOCUMENT, "position": _POSITION, "context": {"triggerKind": 1}},
            _list_answer(),
        ),
    ]


class Rehearsable(Protocol):
    """What a protocol must offer to be rehearsed (``ScopecacheProtocol.rehearse``)."""

    def rehearse(self, method: str, params: dict[str, Any], answer: Any) -> None:
        """Structure a request and serialize its answer without sending anything."""


def rehearse_protocol(protocol: Rehearsable) -> None:
    """Generate the converter's functions for every completion request and answer."""
    started = time.perf_counter()
    for method, params, answer in samples() * REHEARSALS:
        try:
            protocol.rehearse(method, params, answer)
        except Exception:  # an optimisation only: never let it hurt
            logger.exception("rehearsing %s failed", method)
    logger.debug("protocol rehearsal took %.1f ms", (time.perf_counter() - started) * 1000)


def rehearse_client(protocol: Any) -> None:
    """The same for a pygls client's protocol (``client.ServerProcess``).

    The driver's own first request would otherwise pay ~4 ms of converter code
    generation that no editor pays, and count it as the server's.
    """
    msg_id = "scopecache-rehearsal"
    for method, params, answer in samples() * REHEARSALS:
        request = protocol.structure_message(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        )
        json.dumps(request, default=protocol._serialize_message)
        response = JsonRPCResponseMessage(id=msg_id, result=answer, jsonrpc="2.0")
        wire = json.loads(json.dumps(response, default=protocol._serialize_message))
        protocol._result_types[msg_id] = protocol.get_result_type(method)
        protocol.structure_message(wire)
        protocol._result_types.pop(msg_id, None)


def rehearse_exclusion(patterns: Sequence[str]) -> None:
    """Compile the ``exclude`` globs (the answer for the rehearsal URI is not used)."""
    is_excluded(_REHEARSAL_URI, patterns)
