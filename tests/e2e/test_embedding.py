"""The README's embedding example runs as a real language server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lsp_server import create_server
from lsp_server.kit.client import ServerProcess
from lsp_server.settings import Settings
from transport import StaticBackend

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed.py"
URI = "file:///host/app.py"


async def test_embedding_example_answers_from_its_backend_then_from_cache() -> None:
    command = [sys.executable, str(EXAMPLE)]
    async with ServerProcess({"cache": {"l2": "none"}}, command=command) as server:
        server.open(URI, "total = compute\n")
        first = await server.inline_text(URI, 0, 15)
        assert first == " # COMPUTE!"
        assert await server.inline_text(URI, 0, 15) == first
        stats = await server.stats()
        assert stats["served"]["upstream"] == 1
        assert stats["served"]["exact"] == 1
        # the host's process is not ours: its collector is left as it was
        assert stats["gc"]["frozen"] == 0


def test_create_server_takes_settings_backend_and_store() -> None:
    backend = StaticBackend("x")
    server = create_server(Settings(), backend=backend)
    assert server.settings.cache.policy == "hybrid"
    server.apply(server.settings)
    assert server.backend is backend
