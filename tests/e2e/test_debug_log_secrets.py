"""Even at --log-level DEBUG the server's log never holds the API key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess

pytestmark = pytest.mark.e2e

KEY = "sk-debug-log-marker-7f3a9c"


async def test_debug_log_has_no_api_key(tmp_path: Path) -> None:
    corpus = tmp_path / "c.py"
    corpus.write_text("def f(x):\n    return x + 1\n")
    env = {**os.environ, "SCOPECACHE_API_KEY": KEY}
    async with ReferenceProcess(
        [corpus], extra_args=["--require-key-env", "SCOPECACHE_API_KEY"], env=env
    ) as service:
        options = {
            "endpoint": service.url,
            "transport": {"caFile": service.ca_file},
            "cache": {"l2": "none"},
        }
        log = tmp_path / "server.log"
        async with ServerProcess(options, env=env, log_file=log, log_level="DEBUG") as server:
            server.open("file:///p/a.py", "def f(x):\n    return ")
            assert await server.inline_text("file:///p/a.py", 1, 11) == "x + 1"
        text = log.read_text()
        assert "upstream request" in text or "HTTP" in text  # the log did record the exchange
        assert KEY not in text


async def test_debug_log_sent_to_the_editor_has_no_api_key(tmp_path: Path) -> None:
    corpus = tmp_path / "c.py"
    corpus.write_text("def f(x):\n    return x + 1\n")
    env = {**os.environ, "SCOPECACHE_API_KEY": KEY}
    async with ReferenceProcess(
        [corpus], extra_args=["--require-key-env", "SCOPECACHE_API_KEY"], env=env
    ) as service:
        options = {
            "endpoint": service.url,
            "transport": {"caFile": service.ca_file},
            "cache": {"l2": "none"},
        }
        async with ServerProcess(
            options, env=env, log_to_client=True, log_level="DEBUG"
        ) as server:
            server.open("file:///p/a.py", "def f(x):\n    return ")
            assert await server.inline_text("file:///p/a.py", 1, 11) == "x + 1"
        text = "\n".join(m.message for m in server.log_messages)
        assert "upstream request" in text or "HTTP" in text  # the exchange was forwarded
        assert KEY not in text
        assert KEY not in server.stderr_text
