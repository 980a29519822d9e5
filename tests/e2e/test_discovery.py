"""With no endpoint set, the real ``scopecache serve`` finds the real llama.cpp server on loopback.

Each test lists its own ports (``discovery.ports``), so nothing else on the
machine is asked. Beside llama.cpp stands a plain HTTP server (as
code-server holds 8080 by default): it answers every path with a web page
and counts what it is sent, so a test can prove it was recognised as not a
completion service and never sent a prompt.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.conditions import until
from tests.support.llamacpp import LlamaCppServer
from tests.support.reference import ReferenceService
from transport.discovery import discover

pytestmark = pytest.mark.e2e

URI = "file:///work/project/shapes.py"
TEXT = "def area(radius):\n    return \n"
LINE, COLUMN = 1, 11
#: the paths discovery may ask (identification only)
IDENTIFYING_PATHS = {"/props", "/api/version", "/api/tags", "/v1/models"}


class PlainWebServer:
    """An HTTP server that is not a completion service; it counts every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                owner.requests.append((self.command, self.path))
                body = b"<html><body>a web page</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def prompts(self) -> list[tuple[str, str]]:
        """Requests that could carry a prompt: anything but a GET of an identifying path."""
        return [(m, p) for m, p in self.requests if m != "GET" or p not in IDENTIFYING_PATHS]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def web_server() -> Iterator[PlainWebServer]:
    server = PlainWebServer()
    yield server
    server.close()


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def discovering(ports: list[int], **extra: Any) -> dict[str, Any]:
    """No endpoint: only the ports to look at (and no L2 or prefetch, to keep it quick)."""
    return {
        "discovery": {"ports": ports},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        **extra,
    }


async def endpoint_state(server: ServerProcess, *states: str) -> dict[str, Any]:
    """Wait until the stats' ``endpoint`` is in one of ``states``; return it."""
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen.update((await server.stats())["endpoint"])
        return seen.get("state") in states

    await until(reached, f"endpoint state {states}")
    return seen


async def test_with_only_ports_set_the_server_finds_llama_cpp_and_completes(
    llama_server: LlamaCppServer, web_server: PlainWebServer, tmp_path: Path
) -> None:
    closed = free_port()
    ports = [closed, web_server.port, port_of(llama_server.url)]
    log = tmp_path / "server.log"
    async with ServerProcess(discovering(ports), log_file=log) as server:
        endpoint = await endpoint_state(server, "found")
        server.open(URI, TEXT)
        await server.inline_text(URI, LINE, COLUMN)
        stats = await server.stats()
    # llama.cpp answered the completion (whether the tiny model's gibberish is
    # worth showing is the gate's business, not discovery's)
    assert stats["upstreamCompleted"] == 1 and stats["tokens"]["generated"] > 0
    assert endpoint["url"] == llama_server.url
    assert endpoint["kind"] == "llamacpp" and endpoint["source"] == "discovered"
    assert "llama.cpp at " + llama_server.url in endpoint["message"]
    assert stats["upstreamErrors"] == 0
    assert stats["provider"]["detected"] == "llamacpp"
    assert stats["transport"]["endpoint"] == llama_server.url
    # the web server ahead of it in the list was asked who it is, and nothing else
    assert web_server.requests and not web_server.prompts()
    assert {"port": web_server.port, "state": "other"}.items() <= endpoint["seen"][0].items()
    assert f"found a completion server on 127.0.0.1: llama.cpp at {llama_server.url}" in (
        log.read_text()
    )


async def test_a_plain_web_server_is_not_chosen_and_is_never_sent_a_prompt(
    web_server: PlainWebServer,
) -> None:
    async with ServerProcess(discovering([web_server.port])) as server:
        endpoint = await endpoint_state(server, "none")
        server.open(URI, TEXT)
        assert not await server.inline_text(URI, LINE, COLUMN)
        stats = await server.stats()
    assert endpoint["url"] is None and endpoint["kind"] is None
    [seen] = endpoint["seen"]
    assert seen["port"] == web_server.port and seen["state"] == "other"
    assert "not a completion service" in seen["detail"]
    assert f"port {web_server.port}: an HTTP server" in endpoint["message"]
    assert stats["upstreamRequests"] == 0
    assert web_server.requests and not web_server.prompts()


async def test_with_no_server_stats_health_and_the_log_say_none_was_found_naming_the_setting(
    tmp_path: Path,
) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    async with ServerProcess(discovering([port]), log_file=log) as server:
        endpoint = await endpoint_state(server, "none")
        health = await server.health()
        messages = [m.message for m in server.messages]
    assert endpoint["url"] is None and endpoint["setting"] == "endpoint"
    assert f"no completion server found on 127.0.0.1 (ports {port})" in endpoint["message"]
    assert "set endpoint (scopecache.endpoint in VS Code)" in endpoint["message"]
    assert health["ok"] is False and health["upstream"]["status"] == "off"
    assert "endpoint" in health["upstream"]["fix"]
    assert health["discovery"]["state"] == "none"
    assert f"no completion server found on 127.0.0.1 (ports {port})" in log.read_text()
    # a normal state, not a failure: nothing pops up
    assert messages == []


async def test_a_server_started_after_the_editor_is_found_without_a_restart(
    tmp_path: Path,
) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    async with ServerProcess(discovering([port]), log_file=log) as server:
        await endpoint_state(server, "none")
        with LlamaCppServer(tmp_path, port=port) as llama:
            endpoint = await endpoint_state(server, "found")
            server.open(URI, TEXT)
            await server.inline_text(URI, LINE, COLUMN)
            stats = await server.stats()
    assert endpoint["url"] == llama.url == f"http://127.0.0.1:{port}"
    assert stats["upstreamCompleted"] == 1 and stats["tokens"]["generated"] > 0
    assert f"found a completion server on 127.0.0.1: llama.cpp at {llama.url}" in log.read_text()


async def test_discovery_off_keeps_completions_off_and_asks_no_port(
    web_server: PlainWebServer,
) -> None:
    options = discovering([web_server.port])
    options["discovery"]["enabled"] = False
    async with ServerProcess(options) as server:
        stats = await server.stats()
    assert stats["endpoint"]["state"] == "off"
    assert "discovery.enabled" in stats["endpoint"]["message"]
    assert web_server.requests == []


async def test_a_configured_endpoint_is_used_and_no_port_is_asked(
    llama_server: LlamaCppServer, web_server: PlainWebServer
) -> None:
    options = discovering([web_server.port], endpoint=llama_server.url)
    async with ServerProcess(options) as server:
        stats = await server.stats()
    assert stats["endpoint"]["state"] == "configured"
    assert stats["endpoint"]["source"] == "configured"
    assert stats["endpoint"]["url"] == llama_server.url
    assert web_server.requests == []


async def test_an_invalid_port_list_is_reported_and_the_rest_still_applies() -> None:
    port = free_port()
    async with ServerProcess(discovering([port])) as server:
        await endpoint_state(server, "none")
        server.configure({"discovery": {"ports": [70000]}, "cache": {"capacity": 77}})

        async def capacity_applied() -> bool:
            return bool((await server.stats())["cache"]["capacity"] == 77)

        await until(capacity_applied, "the valid setting applied")
        stats = await server.stats()
        messages = [m.message for m in server.messages]
    assert any("discovery.ports: each port must be in 1..65535" in m for m in messages), messages
    assert stats["endpoint"]["ports"] == [port]


async def test_a_model_still_loading_is_shown_as_loading_then_found(tmp_path: Path) -> None:
    from tests.support.code_model import cached

    model = cached()
    if model is None:
        pytest.skip("the real code model is not cached (python -m tests.support.code_model)")
    port = free_port()
    options = discovering([port])
    async with ServerProcess(options) as server:
        await endpoint_state(server, "none")
        llama = LlamaCppServer(tmp_path, model=model, port=port)
        starting = asyncio.ensure_future(asyncio.to_thread(llama.start))
        try:
            async with httpx.AsyncClient() as client:

                async def answers_loading() -> bool:
                    try:
                        response = await client.get(f"http://127.0.0.1:{port}/health")
                    except httpx.HTTPError:
                        return False
                    return response.status_code == 503

                # the real server loads its model for a moment: wake discovery then
                await until(answers_loading, "llama.cpp answering 503 while it loads")
            server.configure(options)
            loading = await endpoint_state(server, "loading", "found")
            found = await endpoint_state(server, "found")
        finally:
            await starting
            llama.stop()
    assert loading["state"] == "loading", loading
    assert loading["kind"] == "llamacpp" and "is loading its model" in loading["message"]
    assert found["url"] == f"http://127.0.0.1:{port}"


# -- what each kind of server is identified as (transport.discovery) ------------


@pytest.fixture(scope="module")
def ollama_like() -> Iterator[ReferenceService]:
    """The reference service answering Ollama's identification (/api/version, /api/tags)."""
    with ReferenceService(tls=False, extra_args=["--identify-as", "ollama"]) as service:
        yield service


@pytest.fixture(scope="module")
def openai_like() -> Iterator[ReferenceService]:
    """The reference service as an OpenAI-compatible server (/v1/models lists a model)."""
    with ReferenceService(tls=False) as service:
        yield service


async def test_each_kind_of_server_is_identified_and_only_asked_with_gets(
    llama_server: LlamaCppServer,
    ollama_like: ReferenceService,
    openai_like: ReferenceService,
    web_server: PlainWebServer,
) -> None:
    closed = free_port()
    ports = [closed, web_server.port, openai_like.port, ollama_like.port, port_of(llama_server.url)]
    discovery = await discover(ports)
    by_port = {a.port: a for a in discovery.answers}
    assert [a.port for a in discovery.answers] == ports
    assert by_port[closed].state == "closed"
    assert by_port[web_server.port].state == "other" and not by_port[web_server.port].kind
    openai = by_port[openai_like.port]
    assert (openai.state, openai.kind, openai.url) == ("found", "openai", openai_like.url)
    assert openai.model
    ollama = by_port[ollama_like.port]
    assert (ollama.state, ollama.kind, ollama.url) == ("found", "ollama", ollama_like.base)
    llama = by_port[port_of(llama_server.url)]
    assert (llama.state, llama.kind, llama.url) == ("found", "llamacpp", llama_server.url)
    # the first port of the list whose server completes code wins
    assert discovery.chosen == openai
    assert not web_server.prompts()
    assert ollama_like.completion_requests("/api/generate") == 0
    assert openai_like.completion_requests() == 0


async def test_ollama_is_found_has_its_model_loaded_first_and_completes(tmp_path: Path) -> None:
    from tests.support.greet import COLUMN as GREET_COLUMN
    from tests.support.greet import CORPUS, EXPECTED
    from tests.support.greet import LINE as GREET_LINE
    from tests.support.greet import TEXT as GREET_TEXT
    from tests.support.greet import URI as GREET_URI

    corpus = tmp_path / "greet.py"
    corpus.write_text(CORPUS)
    ollama = ReferenceService(tls=False, corpus=[corpus], extra_args=["--identify-as", "ollama"])
    with ollama:
        async with ServerProcess(discovering([ollama.port])) as server:
            endpoint = await endpoint_state(server, "found")
            # the model was loaded before the first completion: one request, no prompt
            loads = ollama.completion_requests("/api/generate")
            server.open(GREET_URI, GREET_TEXT)
            suggestion = await server.inline_text(GREET_URI, GREET_LINE, GREET_COLUMN)
        completions = ollama.completion_requests("/api/generate")
    assert endpoint["kind"] == "ollama" and endpoint["url"] == ollama.base
    assert loads == 1
    assert suggestion == EXPECTED and completions == 2


async def test_a_found_server_that_stops_is_let_go_and_found_again_when_it_is_back(
    tmp_path: Path,
) -> None:
    port = free_port()
    options = discovering([port])
    async with ServerProcess(options) as server:
        with LlamaCppServer(tmp_path, port=port):
            await endpoint_state(server, "found")
        server.configure(options)  # check now rather than in ten seconds
        gone = await endpoint_state(server, "none", "searching")
        assert (await server.stats())["transport"]["endpoint"] is None
        with LlamaCppServer(tmp_path, port=port) as llama:
            server.configure(options)
            back = await endpoint_state(server, "found")
            server.open(URI, TEXT)
            await server.inline_text(URI, LINE, COLUMN)
            stats = await server.stats()
    assert gone["url"] is None
    assert back["url"] == llama.url
    assert stats["upstreamCompleted"] == 1 and stats["upstreamErrors"] == 0
