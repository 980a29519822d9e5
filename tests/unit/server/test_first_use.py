"""First-use costs are paid at start-up: after the rehearsal, a request compiles nothing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCResponseMessage

from lsp_server import create_server
from lsp_server.server.first_use import rehearse_client, rehearse_protocol, samples
from lsp_server.server.protocol import ScopecacheProtocol

_compiling: list[bool] = [False]
_compiled: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "compile" and _compiling[0]:
        _compiled.append(str(args[1]))


sys.addaudithook(_audit)  # audit hooks cannot be removed: it only records while asked to


@pytest.fixture
def compiles() -> Iterator[list[str]]:
    """Code compiled (cattrs's generated functions included) while the test body runs."""
    _compiled.clear()
    _compiling[0] = True
    try:
        yield _compiled
    finally:
        _compiling[0] = False


class RecordingWriter:
    """A writer that keeps what would have gone to the client."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data)

    def close(self) -> None:
        pass


def _server_protocol() -> tuple[ScopecacheProtocol, RecordingWriter]:
    protocol = create_server().protocol
    assert isinstance(protocol, ScopecacheProtocol)
    writer = RecordingWriter()
    protocol.set_writer(writer)
    return protocol, writer


def _serve_like_the_wire(protocol: Any, method: str, params: dict[str, Any], answer: Any) -> None:
    protocol.structure_message({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    response = JsonRPCResponseMessage(id=7, result=answer, jsonrpc="2.0")
    json.dumps(response, default=protocol._serialize_message)


def test_first_completion_request_compiles_nothing_after_the_rehearsal(
    compiles: list[str],
) -> None:
    protocol, _ = _server_protocol()
    rehearse_protocol(protocol)
    assert compiles, "the rehearsal is where the converter's code is generated"
    compiles.clear()
    for method, params, answer in samples():
        _serve_like_the_wire(protocol, method, params, answer)
    assert compiles == []


def test_without_the_rehearsal_the_first_request_pays_for_code_generation(
    compiles: list[str],
) -> None:
    protocol, _ = _server_protocol()
    method, params, answer = samples()[0]
    _serve_like_the_wire(protocol, method, params, answer)
    assert compiles  # what the rehearsal moves to start-up


def test_rehearsal_sends_nothing_and_leaves_no_request_behind() -> None:
    protocol, writer = _server_protocol()
    rehearse_protocol(protocol)
    rehearse_protocol(protocol)  # idempotent
    assert writer.sent == []
    assert protocol._request_futures == {}
    assert protocol._result_types == {}


def test_client_rehearsal_prepares_the_driver_side_and_leaves_no_state(
    compiles: list[str],
) -> None:
    client = LanguageClient("driver", "1")
    rehearse_client(client.protocol)
    assert client.protocol._result_types == {}
    compiles.clear()
    method, params, _ = samples()[0]
    message = client.protocol.structure_message(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    )
    json.dumps(message, default=client.protocol._serialize_message)
    assert compiles == []
