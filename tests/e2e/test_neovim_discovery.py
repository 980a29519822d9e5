"""Neovim with nothing configured but the ports finds the real llama.cpp server on loopback.

``editors/neovim/tests/discovery_spec.lua`` runs in a real headless Neovim
against the real ``scopecache serve``: no endpoint is set; llama.cpp, serving
the real code model as its code-completion presets do, listens on one of
``discovery.ports``; ghost text comes from it and ``:checkhealth scopecache``
names it.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from tests.e2e.test_neovim import _run_spec, _server_command
from tests.support.code_model import ModelUnavailable, ensure
from tests.support.llamacpp import missing_reason
from tests.support.typing_session import code_model_server

pytestmark = pytest.mark.e2e


def _unavailable(reason: str) -> None:
    """Skip where the model or the server cannot be had; in CI that is a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def test_neovim_with_no_endpoint_finds_llama_cpp_shows_its_ghost_text_and_names_it(
    tmp_path: Path,
) -> None:
    reason = missing_reason()
    if reason is not None:
        _unavailable(reason)
    try:
        model = ensure()
    except ModelUnavailable as exc:
        _unavailable(f"the code model could not be fetched: {exc}")
        raise
    with socket.socket() as sock:  # a listed port nothing listens on, ahead of llama.cpp
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    workdir = tmp_path / "work"
    workdir.mkdir()
    server_log = tmp_path / "server.log"
    llama = tmp_path / "llama"
    llama.mkdir()
    with code_model_server(llama, Path(model), threads=1) as llama_server:
        port = int(llama_server.url.rsplit(":", 1)[1])
        result = _run_spec(
            "discovery_spec.lua",
            tmp_path,
            {
                "SCOPECACHE_SERVER_CMD": json.dumps(_server_command(server_log)),
                "SCOPECACHE_PORTS": json.dumps([closed, port]),
                "SCOPECACHE_LLAMA_URL": llama_server.url,
                "SCOPECACHE_WORKDIR": str(workdir),
            },
            timeout=240,
        )
    log = server_log.read_text(encoding="utf-8", errors="replace") if server_log.exists() else ""
    assert result.returncode == 0, f"{result.stderr}\n--- server log (tail) ---\n{log[-4000:]}"
    assert "3 tests, 0 failed" in result.stderr, result.stderr
    assert f"found a completion server on 127.0.0.1: llama.cpp at {llama_server.url}" in log
