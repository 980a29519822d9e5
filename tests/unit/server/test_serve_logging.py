"""The server's log: normal protocol events are not warnings."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.server.serve import configure_logging


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    path = tmp_path / "server.log"
    configure_logging("INFO", str(path))
    yield path
    for handler in root.handlers:
        handler.close()
    root.handlers[:], level = saved
    root.setLevel(level)


def test_a_cancel_for_an_answered_request_is_not_logged_as_a_warning(log_file: Path) -> None:
    json_rpc = logging.getLogger("pygls.protocol.json_rpc")
    json_rpc.warning('Cancel notification for unknown message id "%s"', 17)
    json_rpc.error("Unable to send data, no available transport!")
    json_rpc.warning("Ignoring notification for unknown method %r", "x/y")
    text = log_file.read_text()
    assert "Cancel notification" not in text
    assert "no available transport" not in text
    assert "Ignoring notification for unknown method 'x/y'" in text  # other warnings stay
