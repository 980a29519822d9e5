"""Log records sent to the client as window/logMessage, at their level."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from lsprotocol import types

from lsp_server import create_server
from lsp_server.server.client_log import ClientLogHandler, message_type
from lsp_server.server.framing import StdioWriter
from lsp_server.server.serve import configure_logging, wants_log_to_client


class FrameWriter:
    """A protocol writer that keeps each frame's JSON body and the thread that wrote it."""

    def __init__(self) -> None:
        self.frames: list[tuple[dict[str, Any], int]] = []

    def write(self, data: bytes) -> None:
        body = data.split(b"\r\n\r\n", 1)[1]
        self.frames.append((json.loads(body), threading.get_ident()))

    def close(self) -> None:
        pass

    def log_messages(self) -> list[dict[str, Any]]:
        return [m["params"] for m, _ in self.frames if m.get("method") == "window/logMessage"]


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    log = logging.getLogger("scopecache-test-client-log")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    yield log
    log.handlers.clear()


def test_levels_map_to_message_types() -> None:
    assert message_type(logging.CRITICAL) == types.MessageType.Error
    assert message_type(logging.ERROR) == types.MessageType.Error
    assert message_type(logging.WARNING) == types.MessageType.Warning
    assert message_type(logging.INFO) == types.MessageType.Info
    assert message_type(logging.DEBUG) == types.MessageType.Debug


def test_records_before_a_client_is_connected_go_to_the_fallback(logger: logging.Logger) -> None:
    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    logger.error("config: bad file")  # no server yet
    server = create_server()
    handler.attach(server)
    logger.warning("no writer yet")  # attached, but the transport is not up
    assert stderr.getvalue().splitlines() == ["config: bad file", "no writer yet"]


def test_a_record_is_sent_at_its_level_with_the_logger_name(logger: logging.Logger) -> None:
    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    server = create_server()
    writer = FrameWriter()
    server.protocol.set_writer(writer)
    handler.attach(server)
    logger.info("completion service at %s", "https://x")
    logger.warning("careful")
    logger.debug("detail")
    assert writer.log_messages() == [
        {"type": 3, "message": "scopecache-test-client-log: completion service at https://x"},
        {"type": 2, "message": "scopecache-test-client-log: careful"},
        {"type": 5, "message": "scopecache-test-client-log: detail"},
    ]
    assert stderr.getvalue() == ""


async def test_a_record_from_another_thread_is_written_by_the_loop_thread(
    logger: logging.Logger,
) -> None:
    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    server = create_server()
    writer = FrameWriter()
    server.protocol.set_writer(writer)
    handler.attach(server)
    server.loop = asyncio.get_running_loop()
    await asyncio.to_thread(logger.warning, "from a worker")
    for _ in range(10):
        await asyncio.sleep(0)
    assert [m["message"] for m in writer.log_messages()] == [
        "scopecache-test-client-log: from a worker"
    ]
    assert {thread for _, thread in writer.frames} == {threading.get_ident()}


def test_a_record_from_another_thread_before_initialize_goes_to_the_fallback(
    logger: logging.Logger,
) -> None:
    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    server = create_server()
    writer = FrameWriter()
    server.protocol.set_writer(writer)
    handler.attach(server)
    worker = threading.Thread(target=logger.warning, args=("no loop known yet",))
    worker.start()
    worker.join()
    assert writer.frames == []
    assert stderr.getvalue() == "no loop known yet\n"


def test_a_failing_send_keeps_the_record_on_stderr(logger: logging.Logger) -> None:
    class ClosedPipe(FrameWriter):
        def write(self, data: bytes) -> None:
            raise BrokenPipeError

    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    server = create_server()
    server.protocol.set_writer(ClosedPipe())
    handler.attach(server)
    logger.error("the editor left")
    assert "the editor left" in stderr.getvalue()


def _serve_args(**given: Any) -> argparse.Namespace:
    return argparse.Namespace(**{"log_to_client": False, "log_file": None, **given})


def test_forwarding_is_asked_by_flag_or_environment_and_a_log_file_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SCOPECACHE_LOG_TO_CLIENT", raising=False)
    assert not wants_log_to_client(_serve_args())
    assert wants_log_to_client(_serve_args(log_to_client=True))
    assert not wants_log_to_client(_serve_args(log_to_client=True, log_file="/tmp/x.log"))
    monkeypatch.setenv("SCOPECACHE_LOG_TO_CLIENT", "1")
    assert wants_log_to_client(_serve_args())
    assert not wants_log_to_client(_serve_args(log_file="/tmp/x.log"))
    monkeypatch.setenv("SCOPECACHE_LOG_TO_CLIENT", "0")
    assert not wants_log_to_client(_serve_args())


def test_configure_logging_puts_the_forwarder_on_the_root_logger() -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        forwarder = configure_logging("INFO", None, to_client=True)
        assert forwarder is not None and root.handlers == [forwarder]
        assert configure_logging("INFO", None) is None
        assert not isinstance(root.handlers[0], ClientLogHandler)
    finally:
        logging.captureWarnings(False)
        root.handlers[:], level = saved
        root.setLevel(level)


def test_after_exit_only_warnings_and_errors_reach_stderr(logger: logging.Logger) -> None:
    stderr = io.StringIO()
    handler = ClientLogHandler(logging.StreamHandler(stderr))
    logger.addHandler(handler)
    server = create_server()
    stdout = io.BytesIO()
    server.protocol.set_writer(StdioWriter(stdout))
    handler.attach(server)
    logger.info("served")
    assert b"served" in stdout.getvalue()
    stdout.close()  # what pygls's exit handler does to the writer
    logger.debug("cancelling upstream stream (stopped)")
    logger.info("shut down")
    logger.warning("the shared tier was not flushed")
    assert stderr.getvalue() == "the shared tier was not flushed\n"
