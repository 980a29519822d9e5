"""textDocument/inlineCompletion (LSP 3.18): ghost text at the cursor.

A request whose params have the plain shape editors send is answered on the
protocol's immediate route (``ScopecacheProtocol.answer_immediately``): a
hit goes out in the loop iteration that read the request, a miss becomes
the request's task. Any other shape goes through pygls's converter and the
registered handler; both ways answer through ``inline_answer``.
"""

from __future__ import annotations

from functools import partial
from json.encoder import encode_basestring_ascii as json_string
from typing import Any, NamedTuple

from lsprotocol import types

from lsp_server.completion.pending import Pending
from lsp_server.documents.positions import UINTEGER_MAX, Cursor, PositionLike
from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.protocol import ScopecacheProtocol
from lsp_server.server.suggestions import Found, suggest_now

ACCEPT_COMMAND = "scopecache.accepted"

#: an InlineCompletionList of one item, as ``completion_list`` builds it, in JSON text
_ONE_ITEM_JSON = (
    '{"items":[{"insertText":%s,'
    '"range":{"start":{"line":%d,"character":%d},"end":{"line":%d,"character":%d}},'
    '"command":{"title":"Accept","command":%s,"arguments":[%s,{"source":%s}]}}]}'
)
_NO_ITEMS_JSON = '{"items":[]}'

_PLAIN_KEYS = frozenset(("textDocument", "position", "context"))
_AUTOMATIC = {
    int(types.InlineCompletionTriggerKind.Invoked): False,
    int(types.InlineCompletionTriggerKind.Automatic): True,
}


class InlineRequest(NamedTuple):
    """What the answer reads of an inline completion request."""

    uri: str
    position: PositionLike
    #: the editor asked by itself while the user typed (not invoked by the user)
    automatic: bool


def register(server: ScopecacheServer) -> None:
    """Register the inline completion handler and its immediate route."""

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: ScopecacheServer, params: types.InlineCompletionParams
    ) -> dict[str, Any]:
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        request = InlineRequest(params.text_document.uri, params.position, automatic)
        answer = inline_answer(ls, request)
        return await answer.rest if isinstance(answer, Pending) else answer

    if isinstance(server.protocol, ScopecacheProtocol):
        server.protocol.answer_immediately(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, plain_params, partial(immediate_answer, server)
        )


def inline_answer(
    ls: ScopecacheServer, request: InlineRequest
) -> dict[str, Any] | Pending[dict[str, Any]]:
    """The answer at the cursor (JSON), or ``Pending`` when it needs waiting (a miss)."""
    found = suggest_now(ls, request.uri, request.position, automatic=request.automatic)
    if isinstance(found, Pending):
        return Pending(_answer_later(found))
    return completion_list(found)


def immediate_answer(
    ls: ScopecacheServer, request: InlineRequest
) -> str | Pending[dict[str, Any]]:
    """``inline_answer`` for the immediate route: an answer from memory as JSON text."""
    found = suggest_now(ls, request.uri, request.position, automatic=request.automatic)
    if isinstance(found, Pending):
        return Pending(_answer_later(found))
    return completion_list_json(found)


async def _answer_later(found: Pending[Found | None]) -> dict[str, Any]:
    return completion_list(await found.rest)


def completion_list(found: Found | None) -> dict[str, Any]:
    """The ``InlineCompletionList`` for a suggestion (empty for None), in its JSON form.

    Built as JSON rather than as lsprotocol objects: a hit is written out as
    it is, with no converter pass; the tests hold it equal to what the
    converter makes of the same ``types.InlineCompletionList``.
    """
    if found is None:
        return {"items": []}
    suggestion, item_id, ctx = found
    cursor = {"line": ctx.line, "character": ctx.character}
    command = {
        "title": "Accept",
        "command": ACCEPT_COMMAND,
        "arguments": [item_id, {"source": suggestion.source}],
    }
    text_range = {"start": cursor, "end": cursor}
    return {"items": [{"insertText": suggestion.text, "range": text_range, "command": command}]}


def completion_list_json(found: Found | None) -> str:
    """``completion_list`` as JSON text, written without a generic encoder's walk."""
    if found is None:
        return _NO_ITEMS_JSON
    suggestion, item_id, ctx = found
    line, character = ctx.line, ctx.character
    return _ONE_ITEM_JSON % (
        json_string(suggestion.text),
        line,
        character,
        line,
        character,
        json_string(ACCEPT_COMMAND),
        json_string(item_id),
        json_string(suggestion.source),
    )


def plain_params(raw: Any) -> InlineRequest | None:
    """The request in ``raw`` params when they have the plain shape, else None.

    The plain shape, what editors send while the user types: exactly
    ``textDocument`` (only a string ``uri``), ``position`` (only integer
    ``line`` and ``character`` in LSP's range) and ``context`` (only a
    ``triggerKind`` LSP defines). Anything else is left to pygls's converter,
    so that its answer (-32602 for what does not fit) stays the one given.
    """
    if type(raw) is not dict or raw.keys() != _PLAIN_KEYS:
        return None
    document, position, context = raw["textDocument"], raw["position"], raw["context"]
    if not (type(document) is dict and len(document) == 1 and type(document.get("uri")) is str):
        return None
    if not (type(position) is dict and len(position) == 2 and type(context) is dict):
        return None
    line, character = position.get("line"), position.get("character")
    if type(line) is not int or type(character) is not int:
        return None
    trigger = context.get("triggerKind") if len(context) == 1 else None
    automatic = _AUTOMATIC.get(trigger) if type(trigger) is int else None
    if automatic is None:
        return None
    if not (0 <= line <= UINTEGER_MAX and 0 <= character <= UINTEGER_MAX):
        return None  # pygls's converter answers -32602
    return InlineRequest(document["uri"], Cursor(line, character), automatic)
