"""Which clients are offered list completion, and how the server is started.

VS Code opens its suggestion list beside the ghost text when the server
offers ``completionProvider``, and Tab then accepts the list item: a client
that shows inline completions is not offered list completion unless
``completion.listAlongsideInline`` asks for it. ``--stdio`` is what
vscode-languageclient (and other clients) append to the command.
"""

from __future__ import annotations

import sys

import pytest
from lsprotocol import types

from lsp_server.kit.client import ServerProcess
from lsp_server.server.protocol import offers_list_completion
from lsp_server.settings import Settings

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-m", "lsp_server", "serve"]


def test_a_client_without_inline_completion_is_offered_list_completion() -> None:
    plain = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities())
    assert offers_list_completion(plain, Settings())
    assert offers_list_completion(types.ClientCapabilities(), Settings())


def test_a_ghost_text_client_is_offered_list_completion_only_when_asked() -> None:
    inline = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            inline_completion=types.InlineCompletionClientCapabilities()
        )
    )
    assert not offers_list_completion(inline, Settings())
    opted_in = Settings()
    opted_in.completion.list_alongside_inline = True
    assert offers_list_completion(inline, opted_in)


async def test_serve_accepts_stdio_and_offers_ghost_text_clients_inline_completion_only() -> None:
    async with ServerProcess({"cache": {"l2": "none"}}, command=[*SERVE, "--stdio"]) as server:
        result = server.initialize_result
        assert result is not None
        assert result.capabilities.inline_completion_provider is not None
        assert result.capabilities.completion_provider is None
        assert server.messages == []


async def test_list_alongside_inline_puts_list_completion_back() -> None:
    options = {"cache": {"l2": "none"}, "completion": {"listAlongsideInline": True}}
    async with ServerProcess(options, command=SERVE) as server:
        result = server.initialize_result
        assert result is not None
        assert result.capabilities.completion_provider is not None
        assert server.messages == []
