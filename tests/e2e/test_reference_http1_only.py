"""The reference service behaving like llama-server: HTTP/1.1 only, closing after each stream."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

PROMPT = (
    "class Circle:\n    def __init__(self, center: Point, radius: float) -> None:\n"
    "        self.cen"
)
BLOCK = "    def area(self) -> float:\n        "
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@pytest.fixture(scope="module")
def llama_like() -> Iterator[ReferenceService]:
    """A cleartext service in ``--http1-only --close-after-stream`` mode, 5 s keep-alive."""
    args = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]
    with ReferenceService(tls=False, extra_args=args) as service:
        yield service


@pytest.fixture
def service(llama_like: ReferenceService) -> ReferenceService:
    llama_like.reset()
    return llama_like


def wait_for(svc: ReferenceService, key: str, value: int) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    stats = svc.stats()
    while stats[key] < value and time.monotonic() < deadline:
        time.sleep(0.02)
        stats = svc.stats()
    return stats


def read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def post(path: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


def test_the_http2_preface_is_answered_with_400_and_a_closed_connection(
    service: ReferenceService,
) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(H2_PREFACE)
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400")
    assert service.stats()["h2PrefacesRejected"] == 1


def test_a_streamed_response_ends_with_the_connection_closed_without_a_header(
    service: ReferenceService,
) -> None:
    body = b'{"prompt": "%s", "stream": true}' % PROMPT.encode("unicode_escape")
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(post("/v1/completions", body))
        answer = read_until_closed(sock)  # EOF: the service closed it
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"connection: close" not in head.lower()
    assert b"keep-alive: timeout=5, max=100" in head.lower()
    assert b"data: [DONE]" in rest
    assert service.stats()["connectionsClosedAfterStream"] == 1


def test_non_streamed_responses_keep_the_connection_alive(service: ReferenceService) -> None:
    with service.client(http2=False) as client:
        for _ in range(3):
            response = client.post(service.url + "/completions", json={"prompt": PROMPT})
            assert response.status_code == 200
            assert response.http_version == "HTTP/1.1"
    stats = service.stats()
    assert stats["completionConnections"] == 1
    assert stats["connectionsClosedAfterStream"] == 0


def test_a_client_closing_the_connection_mid_stream_is_counted_as_cancelled(
    service: ReferenceService,
) -> None:
    service.set_latency(ttft_ms=0, token_ms=50)
    with service.client(http2=False) as client:
        request = {"prompt": BLOCK, "stream": True}
        with client.stream("POST", service.url + "/completions", json=request) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    break  # leaving an unfinished HTTP/1.1 response closes the connection
    stats = wait_for(service, "streamsCancelled", 1)
    assert stats["streamsCancelled"] == 1
    assert stats["streamsCompleted"] == 0
    assert stats["connectionsClosedAfterStream"] == 0
