"""The driver client (``lsp_server.kit.client``) against a server that misbehaves.

Plugin authors, the benchmarks and every end-to-end test drive the server
through it, so a server that dies or floods its stderr must give a clear
failure, never a wait that lasts until a timeout.
"""

from __future__ import annotations

import sys

import pytest

from lsp_server.kit.client import ServerExited, ServerProcess

pytestmark = pytest.mark.e2e

#: far more than a pipe holds (64 KiB on Linux): unread, it would block the server
FLOOD = 512 * 1024

#: the real server, after a flood of stderr written before it starts
NOISY_SERVER = f"""
import sys
sys.stderr.write("x" * {FLOOD})
sys.stderr.flush()
from lsp_server.cli import main
sys.argv[0] = "scopecache"
sys.exit(main())
"""


async def test_a_server_that_floods_its_stderr_keeps_answering() -> None:
    command = [sys.executable, "-c", NOISY_SERVER, "serve"]
    async with ServerProcess({"cache": {"l2": "none"}}, command=command) as server:
        for _ in range(3):
            assert "acceptance" in await server.stats()
    assert server.stderr_text.endswith("x" * 100)


async def test_a_request_after_the_server_exited_fails_with_its_exit_code() -> None:
    async with ServerProcess({"cache": {"l2": "none"}}) as server:
        server.client.exit(None)  # no shutdown first: LSP has the server exit with code 1
        assert await server.exited() == 1
        expected = "scopecache/stats: the server exited with code 1"
        with pytest.raises(ServerExited, match=expected):
            await server.stats()


async def test_a_server_shut_down_before_exit_ends_with_code_0() -> None:
    async with ServerProcess({"cache": {"l2": "none"}}) as server:
        await server.stats()
    assert await server.exited() == 0
