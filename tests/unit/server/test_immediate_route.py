"""The inline hit path: answered in the loop iteration that read it, misses still pygls's.

didChange takes the same kind of route: a plain-shaped edit goes straight to
its handler, anything else pygls's way to the same handler.

The server runs in process with the fake backend at the transport seam; the
protocol gets each message as the frame reader hands it on
(``ScopecacheProtocol.receive``), and a recording writer keeps what would go
to the editor.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from lsprotocol import types

from cache.store import CompletionStore
from lsp_server import create_server
from lsp_server.server.handlers.inline import completion_list, completion_list_json, plain_params
from lsp_server.server.handlers.sync import plain_change_params
from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.protocol import ScopecacheProtocol, plain_cancel_id
from tests.support.greet import COLUMN, EXPECTED, LINE, TEXT, URI
from transport.backend import StaticBackend

INLINE = types.TEXT_DOCUMENT_INLINE_COMPLETION
#: seconds an answer may take on a loaded machine before a test fails
DEADLINE = 60.0
PARAMS = {
    "textDocument": {"uri": URI},
    "position": {"line": LINE, "character": COLUMN},
    "context": {"triggerKind": 2},
}


class RecordingWriter:
    """Keeps every message the server writes, decoded."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        #: set at every write, for a waiter to look again
        self.wrote = asyncio.Event()

    def write(self, data: bytes) -> None:
        _, body = data.split(b"\r\n\r\n", 1)
        self.sent.append(json.loads(body))
        self.wrote.set()

    def close(self) -> None:
        pass

    def answer(self, msg_id: Any) -> dict[str, Any] | None:
        """The answer to request ``msg_id``, if it was written."""
        for message in self.sent:
            if message.get("id") == msg_id and "method" not in message:
                return message
        return None


class Editor:
    """Hands messages to an in-process server as the frame reader does."""

    def __init__(self, server: ScopecacheServer) -> None:
        assert isinstance(server.protocol, ScopecacheProtocol)
        self.server = server
        self.protocol = server.protocol
        self.writer = RecordingWriter()
        self.protocol.set_writer(self.writer)
        self._ids = 0

    def request(self, method: str, params: Any) -> int:
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.protocol.receive(message)
        return self._ids

    def notify(self, method: str, params: Any) -> None:
        self.protocol.receive({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, msg_id: int) -> dict[str, Any]:
        """The answer to ``msg_id``, waiting for the writes until it comes."""
        while True:
            self.writer.wrote.clear()
            answer = self.writer.answer(msg_id)
            if answer is not None:
                return answer
            try:
                await asyncio.wait_for(self.writer.wrote.wait(), DEADLINE)
            except TimeoutError:
                raise AssertionError(f"no answer to request {msg_id}") from None

    async def start(self) -> None:
        options = {"cache": {"l2": "none"}, "speculative": {"enabled": False}}
        options["throttle"] = {"minDelayMs": 0, "maxDelayMs": 0}
        capabilities = {"textDocument": {"inlineCompletion": {}}}
        init = {"processId": None, "capabilities": capabilities, "initializationOptions": options}
        await self.answer(self.request(types.INITIALIZE, init))
        self.notify(types.INITIALIZED, {})
        document = {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}
        self.notify(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": document})


@pytest.fixture
def editor_for() -> Iterator[Any]:
    made: list[ScopecacheServer] = []

    def make(backend: StaticBackend, store: CompletionStore | None = None) -> Editor:
        server = create_server(backend=backend, store=store)
        made.append(server)
        return Editor(server)

    yield make


async def test_a_hit_is_written_before_the_loop_runs_again(editor_for: Any) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    first = await editor.answer(editor.request(INLINE, PARAMS))  # a miss fills L1
    assert first["result"]["items"][0]["insertText"] == EXPECTED
    msg_id = editor.request(INLINE, PARAMS)
    answer = editor.writer.answer(msg_id)  # no await: nothing else has run
    assert answer is not None
    assert answer["result"]["items"][0]["insertText"] == EXPECTED
    assert answer["result"]["items"][0]["command"]["arguments"][1] == {"source": "exact"}
    assert editor.server.stats.served["exact"] == 1
    assert msg_id not in editor.protocol._request_futures


async def test_a_hit_answers_a_string_id_with_the_same_string(editor_for: Any) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    await editor.answer(editor.request(INLINE, PARAMS))
    msg_id = 'req "8" ü'
    editor.protocol.receive({"jsonrpc": "2.0", "id": msg_id, "method": INLINE, "params": PARAMS})
    answer = editor.writer.answer(msg_id)
    assert answer is not None and answer["result"]["items"][0]["insertText"] == EXPECTED


async def test_a_miss_is_the_requests_task_and_a_cancel_reaches_it(editor_for: Any) -> None:
    asked = asyncio.Event()

    def answer(_request: Any) -> str:
        asked.set()
        return EXPECTED

    backend = StaticBackend(answer, delay=DEADLINE)
    editor = editor_for(backend)
    await editor.start()
    msg_id = editor.request(INLINE, PARAMS)
    assert editor.writer.answer(msg_id) is None
    assert msg_id in editor.protocol._request_futures
    await asyncio.wait_for(asked.wait(), DEADLINE)  # the stream has started
    editor.notify(types.CANCEL_REQUEST, {"id": msg_id})
    answer = await editor.answer(msg_id)
    assert answer["error"]["code"] == types.LSPErrorCodes.RequestCancelled
    assert editor.server.stats.cancelled == 1


async def test_a_cancel_of_an_answered_request_is_routine_and_logs_nothing(
    editor_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    first = editor.request(INLINE, PARAMS)
    await editor.answer(first)
    with caplog.at_level(logging.DEBUG):
        editor.notify(types.CANCEL_REQUEST, {"id": first})  # as an editor does at the next key
        second = await editor.answer(editor.request(INLINE, PARAMS))
    assert second["result"]["items"][0]["insertText"] == EXPECTED
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
    assert editor.server.stats.cancelled == 0


async def test_an_error_on_the_hit_path_is_answered_as_pygls_answers_it(editor_for: Any) -> None:
    class BrokenStore(CompletionStore):
        def lookup(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("store broke")

    editor = editor_for(StaticBackend(EXPECTED), store=BrokenStore(_lru()))
    await editor.start()
    msg_id = editor.request(INLINE, PARAMS)
    answer = editor.writer.answer(msg_id)
    assert answer is not None
    assert answer["error"]["code"] == types.ErrorCodes.InternalError
    assert editor.server.stats.errors == 1


async def test_params_of_another_shape_go_pygls_way_with_its_answer(editor_for: Any) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    await editor.answer(editor.request(INLINE, PARAMS))
    wrong = {**PARAMS, "position": {"line": "two", "character": []}}
    answer = await editor.answer(editor.request(INLINE, wrong))
    assert answer["error"]["code"] == types.ErrorCodes.InvalidParams
    selected = {"range": {"start": PARAMS["position"], "end": PARAMS["position"]}, "text": "x"}
    richer = {**PARAMS, "context": {"triggerKind": 2, "selectedCompletionInfo": selected}}
    msg_id = editor.request(INLINE, richer)
    assert editor.writer.answer(msg_id) is None  # not the immediate route
    answer = await editor.answer(msg_id)
    assert answer["result"]["items"][0]["insertText"] == EXPECTED


async def test_a_hit_waits_for_an_earlier_handler_that_has_not_started(editor_for: Any) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    await editor.answer(editor.request(INLINE, PARAMS))
    elsewhere = {**PARAMS, "position": {"line": 0, "character": 4}}
    miss = editor.request(INLINE, elsewhere)  # a task that runs from the next iteration
    hit = editor.request(INLINE, PARAMS)
    assert editor.writer.answer(hit) is None  # handlers start in the order they arrived
    assert (await editor.answer(hit))["result"]["items"]
    await editor.answer(miss)


async def test_before_initialize_and_after_shutdown_the_route_is_closed(
    editor_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    msg_id = editor.request(INLINE, PARAMS)
    answer = editor.writer.answer(msg_id)
    assert answer is not None and answer["error"]["code"] == types.ErrorCodes.ServerNotInitialized
    await editor.start()
    await editor.answer(editor.request(types.SHUTDOWN, None))
    written = len(editor.writer.sent)
    with caplog.at_level(logging.WARNING, logger="pygls"):
        msg_id = editor.request(INLINE, PARAMS)
    # pygls dropped it as it arrived (its shutdown warning), answered nothing
    # and filed nothing that could answer later
    assert "No more requests" in caplog.text
    assert len(editor.writer.sent) == written
    assert msg_id not in editor.protocol._request_futures


def test_the_answer_is_what_the_converter_makes_of_the_lsp_objects() -> None:
    server = create_server()
    protocol = server.protocol
    assert isinstance(protocol, ScopecacheProtocol)
    cursor = types.Position(line=3, character=7)
    item = types.InlineCompletionItem(
        insert_text="return x",
        range=types.Range(start=cursor, end=cursor),
        command=types.Command(
            title="Accept", command="scopecache.accepted", arguments=["s4", {"source": "typed"}]
        ),
    )
    expected = protocol._converter.unstructure(types.InlineCompletionList(items=[item]))
    found = _found("return x", "typed", "s4", line=3, character=7)
    assert completion_list(found) == expected
    assert json.loads(completion_list_json(found)) == expected
    empty = protocol._converter.unstructure(types.InlineCompletionList(items=[]))
    assert completion_list(None) == json.loads(completion_list_json(None)) == empty


@pytest.mark.parametrize(
    "text", ['say("hi")\n\treturn', "größe = 1  # ünïcödé", "emoji = '😀'", "\x00\x1f\\ \ud800"]
)
def test_the_answer_text_is_json_for_any_suggestion_text(text: str) -> None:
    found = _found(text, "exact", 'id "7"', line=0, character=2**31 - 1)
    answer = completion_list_json(found)
    assert answer.isascii()
    assert json.loads(answer) == completion_list(found)


def test_plain_params_take_only_the_shape_editors_send_while_typing() -> None:
    request = plain_params(PARAMS)
    assert request is not None
    assert request.uri == URI
    assert (request.position.line, request.position.character) == (LINE, COLUMN)
    assert request.automatic
    invoked = plain_params({**PARAMS, "context": {"triggerKind": 1}})
    assert invoked is not None and not invoked.automatic
    position = PARAMS["position"]
    for other in (
        None,
        [],
        {**PARAMS, "workDoneToken": "t"},
        {**PARAMS, "textDocument": {"uri": 7}},
        {**PARAMS, "textDocument": {"uri": URI, "version": 1}},
        {**PARAMS, "position": {"line": True, "character": 0}},
        {**PARAMS, "position": {"line": -1, "character": 0}},
        {**PARAMS, "position": {"line": 2**31, "character": 0}},
        {**PARAMS, "position": {**position, "extra": 0}},
        {**PARAMS, "context": {"triggerKind": 3}},
        {**PARAMS, "context": {}},
    ):
        assert plain_params(other) is None, other


def test_plain_params_take_the_positions_lsprotocol_takes() -> None:
    # the route builds its own position: it must accept what the converter accepts
    edges = ((0, 0), (2**31 - 1, 2**31 - 1), (-1, 0), (0, -1), (2**31, 0), (0, 2**31))
    for line, character in edges:
        try:
            types.Position(line=line, character=character)
        except ValueError:
            converter_takes = False
        else:
            converter_takes = True
        params = {**PARAMS, "position": {"line": line, "character": character}}
        request = plain_params(params)
        assert (request is not None) == converter_takes, (line, character)
        if request is not None:
            assert (request.position.line, request.position.character) == (line, character)


def _lru() -> Any:
    from cache.policies import make_policy

    return make_policy("lru", 16)


def _found(text: str, source: str, item_id: str, *, line: int, character: int) -> Any:
    from lsp_server.completion.pipeline import Suggestion

    class Context:
        pass

    ctx = Context()
    ctx.line, ctx.character = line, character  # type: ignore[attr-defined]
    return Suggestion(text, source), item_id, ctx


DID_CHANGE = types.TEXT_DOCUMENT_DID_CHANGE


def _edit(version: int, line: int, character: int, text: str, **extra: Any) -> dict[str, Any]:
    at = {"line": line, "character": character}
    change = {"range": {"start": at, "end": at}, "text": text}
    return {"textDocument": {"uri": URI, "version": version}, "contentChanges": [change], **extra}


async def test_a_plain_edit_is_applied_as_it_is_read_and_as_pygls_way_applies_it(
    editor_for: Any,
) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    doc = editor.server.documents.get(URI)
    assert doc is not None
    editor.notify(DID_CHANGE, _edit(2, LINE, COLUMN, "x"))  # the immediate route
    assert doc.text == TEXT + "x" and doc.version == 2
    # an unknown key is no longer the plain shape: pygls's way, the same handler
    editor.notify(DID_CHANGE, _edit(3, LINE, COLUMN + 1, "y", workDoneToken="t"))
    assert doc.text == TEXT + "xy" and doc.version == 3
    assert editor.server.stats.keystrokes == 2
    whole = {"textDocument": {"uri": URI, "version": 4}, "contentChanges": [{"text": TEXT}]}
    editor.notify(DID_CHANGE, whole)
    assert doc.text == TEXT and doc.version == 4
    msg_id = editor.request(INLINE, PARAMS)
    assert (await editor.answer(msg_id))["result"]["items"][0]["insertText"] == EXPECTED


async def test_a_failing_notification_handler_is_reported_and_the_server_goes_on(
    editor_for: Any,
) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()

    def broken(params: Any) -> None:
        raise RuntimeError("handler broke")

    editor.protocol.handle_immediately("scopecache/test", lambda raw: raw, broken)
    editor.notify("scopecache/test", {"any": 1})
    shown = [m for m in editor.writer.sent if m.get("method") == types.WINDOW_SHOW_MESSAGE]
    assert shown and "handler broke" in shown[-1]["params"]["message"]
    msg_id = editor.request(INLINE, PARAMS)
    assert (await editor.answer(msg_id))["result"]["items"][0]["insertText"] == EXPECTED


def test_plain_change_params_are_what_the_converter_makes_of_the_same_message() -> None:
    converter = create_server(backend=StaticBackend(EXPECTED)).protocol._converter
    whole = {"textDocument": {"uri": URI, "version": 7}, "contentChanges": [{"text": "a\n"}]}
    counted = _edit(2, 3, 4, "z")
    counted["contentChanges"][0]["rangeLength"] = 0
    several = _edit(2, 0, 0, "")
    last = _edit(2, 2**31 - 1, 0, "é")["contentChanges"][0]
    several["contentChanges"] += [{"text": "whole"}, last]
    for raw in (_edit(2, LINE, COLUMN, "x"), whole, counted, several):
        params = plain_change_params(raw)
        assert params == converter.structure(raw, types.DidChangeTextDocumentParams), raw


def test_plain_change_params_take_only_the_shape_editors_send() -> None:
    edit = _edit(2, 1, 1, "x")
    change = edit["contentChanges"][0]
    at = {"line": 1, "character": 1}
    for other in (
        None,
        [],
        {**edit, "extra": 1},
        {**edit, "textDocument": {"uri": URI}},
        {**edit, "textDocument": {"uri": URI, "version": True}},
        {**edit, "textDocument": {"uri": URI, "version": 2**31}},
        {**edit, "contentChanges": change},
        {**edit, "contentChanges": [{**change, "text": 1}]},
        {**edit, "contentChanges": [{**change, "rangeLength": "1"}]},
        {**edit, "contentChanges": [{**change, "range": {"start": at}}]},
        *(
            {**edit, "contentChanges": [{**change, "range": {"start": at, "end": end}}]}
            for end in ({**at, "line": -1}, {**at, "x": 0}, {"line": 1.0, "character": 1})
        ),
    ):
        assert plain_change_params(other) is None, other


def test_plain_cancel_ids_are_integers_and_strings_alone() -> None:
    assert plain_cancel_id({"id": 7}) == 7
    assert plain_cancel_id({"id": 0}) == 0
    assert plain_cancel_id({"id": "7"}) == "7"
    for other in (None, [], {}, {"id": True}, {"id": 7.0}, {"id": None}, {"id": 7, "x": 1}):
        assert plain_cancel_id(other) is None, other


async def test_after_shutdown_an_edit_is_dropped_as_pygls_drops_it(
    editor_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    editor = editor_for(StaticBackend(EXPECTED))
    await editor.start()
    doc = editor.server.documents.get(URI)
    assert doc is not None
    await editor.answer(editor.request(types.SHUTDOWN, None))
    with caplog.at_level(logging.WARNING, logger="pygls"):
        editor.notify(DID_CHANGE, _edit(2, LINE, COLUMN, "x"))
    assert "No more requests" in caplog.text
    assert doc.text == TEXT and doc.version == 1
