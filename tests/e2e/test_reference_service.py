"""The reference completion service, observed from real HTTP clients on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import httpx
import pytest

from lsp_server.kit.upstream_process import read_port_file
from tests.support.conditions import until_true_blocking
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

PROMPT = (
    "class Circle:\n    def __init__(self, center: Point, radius: float) -> None:\n"
    "        self.cen"
)
BLOCK = "    def area(self) -> float:\n        "


def sse_events(lines: Iterator[str]) -> list[Any]:
    """Parse ``data:`` lines; ``[DONE]`` becomes the string ``"[DONE]"``."""
    events: list[Any] = []
    for line in lines:
        if not line.startswith("data: "):
            assert line == "", f"unexpected SSE line {line!r}"
            continue
        payload = line[len("data: ") :]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def post(svc: ReferenceService, client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    """A completion of ``PROMPT``; ``body`` adds or overrides request fields."""
    return client.post(svc.url + "/completions", json={"prompt": PROMPT, **body})


def stream(
    svc: ReferenceService, client: httpx.Client, prompt: str
) -> AbstractContextManager[httpx.Response]:
    """A streamed completion of ``prompt``, to be used in a ``with``."""
    return client.stream("POST", svc.url + "/completions", json={"prompt": prompt, "stream": True})


@pytest.fixture(scope="module")
def plain_service() -> Iterator[ReferenceService]:
    with ReferenceService(tls=False) as service:
        yield service


# -- protocols ---------------------------------------------------------------


def test_tls_service_speaks_http2_with_its_own_ca(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    assert svc.ca_file is not None and svc.ca_file.exists()
    verify = ssl.create_default_context(cafile=str(svc.ca_file))
    with httpx.Client(http2=True, verify=verify) as client:
        response = client.post(svc.url + "/completions", json={"prompt": PROMPT})
    assert response.http_version == "HTTP/2"
    assert response.json()["choices"][0]["text"] == "ter = center"


def test_tls_service_also_speaks_http1(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    with svc.client(http2=False) as client:
        response = client.post(svc.url + "/completions", json={"prompt": PROMPT})
    assert response.http_version == "HTTP/1.1"
    assert svc.stats()["httpVersions"] == {"1.1": 1}


def test_untrusted_client_fails_tls_verification(
    shared_reference_service: ReferenceService,
) -> None:
    with httpx.Client(http2=True) as client, pytest.raises(httpx.ConnectError):
        client.get(shared_reference_service.base + "/health")


def test_certificate_covers_test_names(shared_reference_service: ReferenceService) -> None:
    # completions.test is not resolvable here, so connect to 127.0.0.1 and
    # check the certificate against the name the way a pinned client would.
    svc = shared_reference_service
    context = ssl.create_default_context(cafile=str(svc.ca_file))
    with socket.create_connection(("127.0.0.1", svc.port)) as raw:
        with context.wrap_socket(raw, server_hostname="completions.test") as tls:
            assert tls.version() is not None


def test_plain_http_serves_h2c_with_prior_knowledge(plain_service: ReferenceService) -> None:
    with httpx.Client(http1=False, http2=True) as client:
        response = client.post(plain_service.url + "/completions", json={"prompt": PROMPT})
    assert response.http_version == "HTTP/2"
    assert response.json()["choices"][0]["text"] == "ter = center"


def test_plain_http_serves_http1(plain_service: ReferenceService) -> None:
    with httpx.Client() as client:
        response = client.get(plain_service.base + "/health")
    assert response.http_version == "HTTP/1.1"
    assert response.json() == {"status": "ok"}


# -- shapes ------------------------------------------------------------------


def test_non_stream_completion_reports_usage(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    with svc.client() as client:
        request = {"prompt": PROMPT, "max_tokens": 1}
        body = client.post(svc.url + "/completions", json=request).json()
    assert body["choices"][0] == {"text": "ter", "index": 0, "logprobs": None,
                                  "finish_reason": "length"}
    usage = body["usage"]
    assert usage["completion_tokens"] == 1
    assert usage["total_tokens"] == usage["prompt_tokens"] + 1 > 1


def test_streamed_completion_is_sse_chunks_then_done(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    with svc.client() as client:
        with stream(svc, client, BLOCK) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse_events(response.iter_lines())
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert len(chunks) > 3
    assert "".join(c["choices"][0]["text"] for c in chunks) == "return math.pi * self.radius ** 2"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    stats = svc.stats()
    assert stats["streamsStarted"] == stats["streamsCompleted"] == 1


def test_chat_completions_answer_the_last_user_message(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    messages = [{"role": "system", "content": "complete code"},
                {"role": "user", "content": PROMPT}]
    with svc.client() as client:
        whole = client.post(svc.url + "/chat/completions", json={"messages": messages}).json()
        with client.stream("POST", svc.url + "/chat/completions",
                           json={"messages": messages, "stream": True}) as response:
            events = sse_events(response.iter_lines())
    assert whole["choices"][0]["message"] == {"role": "assistant", "content": "ter = center"}
    assert whole["usage"]["completion_tokens"] == 3
    deltas = [e["choices"][0]["delta"].get("content", "") for e in events[:-1]]
    assert "".join(deltas) == "ter = center"
    assert events[-1] == "[DONE]"


def test_infill_speaks_llama_cpp(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    request = {"input_prefix": "def fibonacci(n: int) -> int:\n    if n < 2:\n        ret",
               "input_suffix": "\n", "n_predict": 16}
    with svc.client() as client:
        whole = client.post(svc.base + "/infill", json=request).json()
        with client.stream("POST", svc.base + "/infill",
                           json={**request, "stream": True}) as response:
            events = sse_events(response.iter_lines())
    assert whole["content"] == "urn n"
    assert whole["stop"] is True
    assert all(e["stop"] is False for e in events[:-1])
    assert events[-1]["stop"] is True
    assert "".join(e["content"] for e in events) == "urn n"


def test_generate_speaks_ollama_ndjson(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    request = {"model": "m", "prompt": "        return math.pi * self.radius ** ", "raw": True}
    with svc.client() as client:
        lines = client.post(svc.base + "/api/generate", json=request).text.splitlines()
        whole = client.post(svc.base + "/api/generate",
                            json={**request, "stream": False, "options": {"num_predict": 5}}).json()
    events = [json.loads(line) for line in lines]
    assert [e["done"] for e in events] == [False] * (len(events) - 1) + [True]
    assert "".join(e["response"] for e in events) == "2"
    assert whole["response"] == "2" and whole["done"] is True


def test_health_and_models(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    with svc.client() as client:
        assert client.get(svc.base + "/health").json() == {"status": "ok"}
        assert client.get(svc.url + "/models").json()["data"][0]["id"]
        assert client.post(svc.url + "/completions", content=b"not json").status_code == 400
        assert client.get(svc.base + "/nowhere").status_code == 404
    assert svc.stats()["requests"]["total"] == 1  # only the completion request counts


# -- counters ----------------------------------------------------------------


def test_stats_count_requests_and_one_connection_per_client(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    with svc.client() as client:
        for _ in range(3):
            client.post(svc.url + "/completions", json={"prompt": PROMPT})
        client.post(svc.base + "/infill", json={"input_prefix": PROMPT})
    stats = svc.stats()
    assert stats["requests"] == {"total": 4, "/v1/completions": 3, "/infill": 1}
    assert stats["completionConnections"] == 1
    assert stats["connections"] == 1  # the harness's control connection predates the reset
    assert stats["httpVersions"] == {"2": 4}
    assert {r["connection"] for r in stats["recent"]} == {stats["recent"][0]["connection"]}
    svc.reset_stats()
    assert svc.stats()["requests"] == {"total": 0}


def test_connection_is_forgotten_as_soon_as_the_client_closes_it(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    baseline = svc.stats()["openConnections"]
    with svc.client() as client:
        client.post(svc.url + "/completions", json={"prompt": PROMPT})
        assert svc.stats()["openConnections"] == baseline + 1
    until_true_blocking(
        lambda: svc.stats()["openConnections"] <= baseline, "the service to forget the connection"
    )
    assert svc.stats()["openConnections"] == baseline


def test_a_second_client_is_a_second_connection(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    for _ in range(2):
        with svc.client() as client:
            client.post(svc.url + "/completions", json={"prompt": PROMPT})
    assert svc.stats()["completionConnections"] == 2


def wait_for(svc: ReferenceService, key: str, value: int) -> dict[str, Any]:
    """The service's stats once ``key`` has reached ``value``."""
    stats = svc.stats()

    def reached() -> bool:
        nonlocal stats
        stats = svc.stats()
        return bool(stats[key] >= value)

    until_true_blocking(reached, f"the service's {key} to reach {value}")
    return stats


def h2_connection(svc: ReferenceService) -> tuple[ssl.SSLSocket, h2.connection.H2Connection]:
    raw = socket.create_connection(("127.0.0.1", svc.port))
    context = svc.ssl_context()
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
    assert sock.selected_alpn_protocol() == "h2"
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def h2_post(conn: h2.connection.H2Connection, svc: ReferenceService, body: dict[str, Any]) -> int:
    stream_id = conn.get_next_available_stream_id()
    data = json.dumps(body).encode()
    conn.send_headers(stream_id, [
        (":method", "POST"), (":path", "/v1/completions"), (":scheme", "https"),
        (":authority", f"127.0.0.1:{svc.port}"), ("content-type", "application/json"),
        ("content-length", str(len(data))),
    ])
    conn.send_data(stream_id, data, end_stream=True)
    return stream_id


def h2_read_until(sock: ssl.SSLSocket, conn: h2.connection.H2Connection,
                  kind: type[h2.events.Event], stream_id: int) -> bytes:
    """Read frames until an event of ``kind`` on ``stream_id``; returns the DATA seen."""
    received = b""
    while True:
        sock.sendall(conn.data_to_send())
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        for event in conn.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                if event.stream_id == stream_id:
                    received += event.data
            if isinstance(event, kind) and getattr(event, "stream_id", None) == stream_id:
                sock.sendall(conn.data_to_send())
                return received


def test_http2_stream_reset_is_counted_and_the_connection_keeps_serving(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_latency(ttft_ms=0, token_ms=50)
    sock, conn = h2_connection(svc)
    try:
        first = h2_post(conn, svc, {"prompt": BLOCK, "stream": True})
        h2_read_until(sock, conn, h2.events.DataReceived, first)
        conn.reset_stream(first, error_code=h2.errors.ErrorCodes.CANCEL)
        sock.sendall(conn.data_to_send())
        stats = wait_for(svc, "streamsCancelled", 1)
        svc.set_latency(0, 0)
        second = h2_post(conn, svc, {"prompt": PROMPT})
        body = h2_read_until(sock, conn, h2.events.StreamEnded, second)
    finally:
        sock.close()
    assert stats["streamsCancelled"] == 1
    assert json.loads(body)["choices"][0]["text"] == "ter = center"
    stats = svc.stats()
    assert stats["streamsCompleted"] == 0
    assert stats["completionConnections"] == 1
    assert "Traceback" not in svc.log()


def test_http1_client_that_hangs_up_mid_stream_is_counted(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_latency(ttft_ms=0, token_ms=50)
    with svc.client(http2=False) as client:
        with stream(svc, client, BLOCK) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    break  # closing an unfinished HTTP/1.1 response closes the connection
    stats = wait_for(svc, "streamsCancelled", 1)
    assert stats["streamsCancelled"] == 1
    svc.set_latency(0, 0)
    with svc.client() as client:
        assert client.post(svc.url + "/completions", json={"prompt": PROMPT}).status_code == 200


def test_httpx_leaving_an_h2_stream_early_does_not_reset_it(
    shared_reference_service: ReferenceService,
) -> None:
    """The trap DESIGN.md names: httpx/httpcore send no RST_STREAM on close."""
    svc = shared_reference_service
    svc.set_latency(ttft_ms=0, token_ms=20)
    with svc.client() as client:
        with stream(svc, client, BLOCK) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    break
        stats = wait_for(svc, "streamsCompleted", 1)
    assert stats["streamsCompleted"] == 1  # the service generated for nobody
    assert stats["streamsCancelled"] == 0


# -- command line ------------------------------------------------------------


def test_upstream_options_match_the_scopecache_command_line() -> None:
    from lsp_server.cli import build_parser as scopecache_parser
    from lsp_server.kit.reference.cli import build_parser

    def options(parser: Any) -> dict[str, Any]:
        return {
            a.dest: (tuple(a.option_strings), a.default, a.nargs, a.type)
            for a in parser._actions
            if a.dest not in ("help", "module")
        }

    sub = next(a for a in scopecache_parser()._actions if a.dest == "command")
    assert isinstance(sub.choices, dict)
    assert options(sub.choices["upstream"]) == options(build_parser())


def test_service_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.kit.reference", "--port", "0", "--port-file",
         str(port_file)],
        stderr=subprocess.PIPE,
    )
    try:
        until_true_blocking(port_file.exists, "the service to write its port file")
        port = int(port_file.read_text())
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert f"listening on http://127.0.0.1:{port}" in err.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- control endpoints -------------------------------------------------------

#: every control request the service knows, each with a body it accepts
CONTROL_REQUESTS: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("POST", "/__stats/reset", None),
    ("GET", "/__faults", None),
    ("POST", "/__faults", {"mode": "status", "count": -1, "status": 503}),
    ("DELETE", "/__faults", None),
    ("POST", "/__auth", {"clientId": "c", "clientSecret": "s"}),
    ("DELETE", "/__auth", None),
    ("POST", "/__auth/revoke", None),
    ("POST", "/__latency", {"ttftMs": 0, "tokenMs": 0}),
)


def control_answers(svc: ReferenceService, client: httpx.Client) -> dict[str, httpx.Response]:
    return {
        f"{method} {path}": client.request(method, svc.base + path, json=body)
        for method, path, body in CONTROL_REQUESTS
    }


def test_control_endpoints_are_404_unless_the_service_is_started_with_control() -> None:
    with ReferenceService(tls=False, control=False) as svc, svc.client(http2=False) as client:
        answers = control_answers(svc, client)
        completion = post(svc, client, {})
        stats = client.get(svc.base + "/__stats")
    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(answers, 404)
    assert all("--control" in r.json()["error"]["message"] for r in answers.values())
    # nothing was switched: no fault armed, no token mode, the counters kept
    assert completion.status_code == 200
    assert stats.status_code == 200 and stats.json()["requests"]["/v1/completions"] == 1


def test_control_endpoints_answer_when_the_service_is_started_with_control(
    plain_service: ReferenceService,
) -> None:
    svc = plain_service
    try:
        with svc.client(http2=False) as client:
            answers = control_answers(svc, client)
    finally:
        svc.reset()
    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(answers, 200)
    assert answers["POST /__faults"].json()["armed"]
    assert answers["POST /__auth"].json()["tokenMode"] is True


# -- faults ------------------------------------------------------------------


def test_status_fault_answers_the_status_with_retry_after_then_recovers(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("status", count=2, status=429, retryAfter=3)
    with svc.client() as client:
        limited = [post(svc, client, {}) for _ in range(2)]
        healthy = post(svc, client, {})
    assert [r.status_code for r in limited] == [429, 429]
    assert limited[0].headers["retry-after"] == "3"
    assert "error" in limited[0].json()
    assert healthy.status_code == 200
    stats = svc.stats()
    assert stats["faultsApplied"] == 2 and stats["requests"]["total"] == 3


def test_fault_with_count_minus_one_lasts_until_cleared(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("status", count=-1, status=500)
    with svc.client() as client:
        assert [post(svc, client, {}).status_code for _ in range(4)] == [500] * 4
        svc.clear_faults()
        assert post(svc, client, {}).status_code == 200


def test_unknown_fault_mode_is_refused(shared_reference_service: ReferenceService) -> None:
    with pytest.raises(Exception, match="unknown fault mode"):
        shared_reference_service.set_fault("gremlins")


def test_malformed_json_fault_spoils_body_and_stream(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("malformed-json", count=2)
    with svc.client() as client:
        whole = post(svc, client, {})
        with stream(svc, client, PROMPT) as response:
            lines = [line for line in response.iter_lines() if line]
    assert whole.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        whole.json()
    assert lines[-1].startswith("data: ")
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[-1][len("data: "):])
    assert "data: [DONE]" not in lines


def test_malformed_sse_fault_sends_lines_without_data(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("malformed-sse")
    with svc.client() as client:
        with stream(svc, client, PROMPT) as response:
            lines = [line for line in response.iter_lines() if line]
    assert lines and not any(line.startswith("data:") for line in lines)


def test_never_ending_stream_runs_until_the_client_leaves(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("never-ending", interval=0.005)
    seen = 0
    with svc.client(http2=False) as client:
        with stream(svc, client, PROMPT) as response:
            for line in response.iter_lines():
                if line.startswith("data: "):
                    assert json.loads(line[6:])["choices"][0]["text"]
                    seen += 1
                if seen == 20:  # far more than the real completion has tokens
                    break
    assert seen == 20
    assert wait_for(svc, "streamsCancelled", 1)["streamsCancelled"] == 1


def test_slow_headers_fault_trips_a_client_read_timeout(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("slow-headers", delay=30)
    with svc.client(timeout=httpx.Timeout(10.0, read=0.2)) as client:
        with pytest.raises(httpx.ReadTimeout):
            post(svc, client, {})
        assert post(svc, client, {}).status_code == 200


@pytest.mark.parametrize("http2", [True, False])
def test_reset_fault_breaks_the_connection_before_any_header(
    shared_reference_service: ReferenceService, http2: bool
) -> None:
    svc = shared_reference_service
    svc.set_fault("reset")
    with svc.client(http2=http2) as client:
        # Which error depends on what the client was doing when the RST landed
        # (reading the response, or still writing, e.g. an h2 WINDOW_UPDATE).
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            post(svc, client, {})
        assert post(svc, client, {}).status_code == 200  # on a fresh connection
    stats = svc.stats()
    assert stats["streamsAborted"] == 1
    assert stats["completionConnections"] == 2
    assert "Traceback" not in svc.log()


def test_reset_mid_stream_fault_breaks_after_some_chunks(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("reset-mid-stream", chunks=2)
    chunks: list[str] = []
    with svc.client() as client:
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            with stream(svc, client, BLOCK) as response:
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        chunks.append(line)
    assert len(chunks) == 2
    stats = svc.stats()
    assert stats["streamsAborted"] == 1 and stats["streamsCompleted"] == 0


def test_huge_fault_sends_a_suggestion_of_the_asked_size(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("huge", count=2, size=300_000)
    with svc.client() as client:
        whole = post(svc, client, {})
        with stream(svc, client, PROMPT) as response:
            events = sse_events(response.iter_lines())
    assert len(whole.json()["choices"][0]["text"]) == 300_000
    assert sum(len(e["choices"][0]["text"]) for e in events[:-1]) == 300_000


def test_invalid_utf8_fault_puts_undecodable_bytes_in_the_stream(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.set_fault("invalid-utf8")
    with svc.client() as client:
        with stream(svc, client, PROMPT) as response:
            raw = b"".join(response.iter_raw())
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    assert raw.endswith(b"data: [DONE]\n\n")


def test_flood_fault_streams_many_megabytes(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    svc.set_fault("flood", size=4_000_000)
    total = 0
    with svc.client() as client:
        with stream(svc, client, PROMPT) as response:
            events = sse_events(response.iter_lines())
    total = sum(len(e["choices"][0]["text"]) for e in events[:-1])
    assert total == 4_000_000
    assert events[-1] == "[DONE]"


# -- auth --------------------------------------------------------------------


def test_static_key_is_required_when_configured() -> None:
    secret = "static-key-for-test-0001"
    with ReferenceService(require_key_env="REF_TEST_KEY", env={"REF_TEST_KEY": secret},
                          log_level="DEBUG") as svc, svc.client() as client:
        missing = post(svc, client, {})
        wrong = client.post(svc.url + "/completions", json={"prompt": PROMPT},
                            headers={"Authorization": "Bearer nope"})
        right = client.post(svc.url + "/completions", json={"prompt": PROMPT},
                            headers={"Authorization": f"Bearer {secret}"})
        stats = svc.stats()
        log = svc.log()
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert missing.headers["www-authenticate"] == "Bearer"
    assert stats["authFailures"] == 2
    assert secret not in log


def fetch_token(svc: ReferenceService, client: httpx.Client, **form: str) -> httpx.Response:
    data = {"grant_type": "client_credentials", "client_id": "editor",
            "client_secret": "s3cret", "scope": "completions", **form}
    return client.post(svc.token_url, data=data)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_token_mode_issues_short_lived_tokens_that_completions_require(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.enable_tokens("editor", "s3cret", lifetime=3.0)
    with svc.client() as client:
        assert post(svc, client, {}).status_code == 401
        answer = fetch_token(svc, client).json()
        assert answer["token_type"] == "Bearer" and answer["expires_in"] == 3.0
        token = answer["access_token"]
        ok = client.post(svc.url + "/completions", json={"prompt": PROMPT}, headers=bearer(token))
        answers: list[int] = []

        def refused() -> bool:
            # the same token until it has outlived its lifetime
            answer = client.post(
                svc.url + "/completions", json={"prompt": PROMPT}, headers=bearer(token)
            )
            answers.append(answer.status_code)
            return answers[-1] == 401

        until_true_blocking(refused, "the token to expire")
    assert ok.status_code == 200
    assert set(answers[:-1]) <= {200}  # accepted while it lived, then refused
    stats = svc.stats()
    assert stats["tokenRequests"] == 1 and stats["authFailures"] == 2


def test_token_endpoint_checks_credentials_and_grant(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.enable_tokens("editor", "s3cret", lifetime=60)
    with svc.client() as client:
        wrong_secret = fetch_token(svc, client, client_secret="guess")
        wrong_grant = fetch_token(svc, client, grant_type="password")
        basic = client.post(svc.token_url, data={"grant_type": "client_credentials"},
                            auth=("editor", "s3cret"))
    assert wrong_secret.status_code == 401 and wrong_secret.json()["error"] == "invalid_client"
    assert wrong_grant.status_code == 400
    assert basic.status_code == 200 and basic.json()["access_token"]
    assert svc.stats()["tokenRequests"] == 3


def test_revoked_tokens_are_refused(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    svc.enable_tokens("editor", "s3cret", lifetime=60)
    with svc.client() as client:
        token = fetch_token(svc, client).json()["access_token"]
        headers = bearer(token)
        before = client.post(svc.url + "/completions", json={"prompt": PROMPT}, headers=headers)
        assert svc.revoke_tokens() == 1
        after = client.post(svc.url + "/completions", json={"prompt": PROMPT}, headers=headers)
        fresh = fetch_token(svc, client).json()["access_token"]
        again = client.post(svc.url + "/completions", json={"prompt": PROMPT},
                            headers=bearer(fresh))
    assert (before.status_code, after.status_code, again.status_code) == (200, 401, 200)


def test_token_endpoint_faults(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    svc.enable_tokens("editor", "s3cret", lifetime=60)
    svc.set_fault("status", status=503, retryAfter=1, target="token")
    svc.set_fault("malformed-json", target="token")
    with svc.client() as client:
        down = fetch_token(svc, client)
        garbage = fetch_token(svc, client)
        back = fetch_token(svc, client)
        completion = post(svc, client, {})  # completion faults are separate
    assert down.status_code == 503 and down.headers["retry-after"] == "1"
    with pytest.raises(json.JSONDecodeError):
        garbage.json()
    assert back.status_code == 200
    assert completion.status_code == 401


def test_the_listening_line_gives_the_endpoint_and_ca_file_to_paste(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "upstream", "--port", "0", "--port-file",
         str(port_file), "--tls-self-signed", str(tmp_path / "tls")],
        stderr=subprocess.PIPE,
    )
    try:
        until_true_blocking(  # the port file appears once the service listens
            lambda: read_port_file(port_file) is not None, "the service to write its port file"
        )
        port = read_port_file(port_file)
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode()
    assert f'endpoint = "https://127.0.0.1:{port}/v1"' in text
    assert f'transport.caFile = "{(tmp_path / "tls" / "ca.pem").resolve()}"' in text


def test_upstream_help_states_the_default_port_and_the_corpus_limit() -> None:
    from lsp_server.kit.reference.cli import build_parser

    text = " ".join(build_parser().format_help().split())
    assert "default: 8443" in text
    assert "--corpus-limit-mb MB" in text and "default: 16" in text
