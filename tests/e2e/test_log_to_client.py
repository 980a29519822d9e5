"""``scopecache serve --log-to-client``: the editor gets the log at the server's levels.

Neovim files a server's stderr at ERROR whatever it says; sent as
``window/logMessage`` each record keeps its level. stderr keeps only what
cannot go over LSP.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.conditions import until

pytestmark = pytest.mark.e2e


async def _wait_for_message(server: ServerProcess, text: str) -> types.LogMessageParams:
    found: list[types.LogMessageParams] = []

    async def arrived() -> bool:
        found.extend(m for m in server.log_messages if text in m.message)
        return bool(found)

    await until(arrived, f"a log message with {text!r}")
    return found[0]


async def test_log_records_reach_the_editor_at_their_levels_and_stderr_stays_quiet(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "c.py"
    corpus.write_text("def f(x):\n    return x + 1\n")
    async with ReferenceProcess([corpus]) as service:
        options = {
            "endpoint": service.url,
            # the server warns about this, from the thread that builds the backend
            "transport": {"verifyTls": False},
            "cache": {"l2": "none"},
        }
        async with ServerProcess(options, log_to_client=True, log_level="DEBUG") as server:
            server.open("file:///p/a.py", "def f(x):\n    return ")
            assert await server.inline_text("file:///p/a.py", 1, 11) == "x + 1"
            info = await _wait_for_message(server, "completion service at ")
            warning = await _wait_for_message(server, "TLS certificate verification is OFF")
    assert info.type == types.MessageType.Info
    assert info.message.startswith("transport.http: completion service at https://127.0.0.1:")
    assert warning.type == types.MessageType.Warning
    assert any(m.type == types.MessageType.Debug for m in server.log_messages)
    assert not any(m.type == types.MessageType.Error for m in server.log_messages)
    for level in ("DEBUG", "INFO", "WARNING", "ERROR"):
        assert f" {level} " not in server.stderr_text, server.stderr_text
