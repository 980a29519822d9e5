"""``scopecache/health`` and configuration retries, in the real server against the real service.

The health answer comes from one real completion request through the
server's own transport, so it is red exactly when completions are broken:
no ``caFile`` against a self-signed TLS service, a CA file that does not
exist, a wrong endpoint. A CA file that appears after start-up is picked up
when the settings are sent again, and on a later request after a back-off.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support import conditions
from tests.support.greet import COLUMN, CORPUS, EXPECTED, LINE, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceService]:
    corpus = tmp_path_factory.mktemp("corpus") / "greet.py"
    corpus.write_text(CORPUS)
    with ReferenceService(tls=True, corpus=[corpus]) as svc:
        yield svc


def settings(endpoint: str, ca_file: str | Path | None, **extra: Any) -> dict[str, Any]:
    transport: dict[str, Any] = {"caFile": str(ca_file)} if ca_file is not None else {}
    return {
        "endpoint": endpoint,
        "provider": "openai",
        "model": "m",
        "transport": transport,
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        **extra,
    }


@pytest.fixture
async def started() -> AsyncIterator[list[ServerProcess]]:
    """Server processes a test starts; each is stopped at the end."""
    servers: list[ServerProcess] = []
    yield servers
    for server in servers:
        await server.stop()


async def start(started: list[ServerProcess], options: dict[str, Any]) -> ServerProcess:
    server = ServerProcess(options)
    started.append(server)
    await server.start()
    return server


async def until(what: str, condition: Any) -> Any:
    """Await ``condition()`` until it returns something truthy, and return that."""
    found: Any = None

    async def holds() -> bool:
        nonlocal found
        found = await condition()
        return bool(found)

    await conditions.until(holds, what)
    return found


async def test_health_is_green_when_a_completion_goes_through(
    service: ReferenceService, started: list[ServerProcess]
) -> None:
    server = await start(started, settings(service.url, service.ca_file))
    for params in (None, {}):
        health = await server.health(params)
        assert health["ok"] is True, health
        assert health["upstream"]["status"] == "ok" and health["upstream"]["chars"] > 0
        assert health["tls"] == {
            "used": True, "verify": True, "caFile": str(service.ca_file), "caFileStatus": "ok"
        }  # fmt: skip
        assert health["endpoint"] == service.url and health["settingsProblems"] == []
        assert health["fix"] is None
    stats = await server.stats()
    assert stats["requests"] == 0 and stats["upstreamRequests"] == 0  # probes are not requests


async def test_health_is_red_without_a_ca_file_against_a_self_signed_service(
    service: ReferenceService, started: list[ServerProcess]
) -> None:
    server = await start(started, settings(service.url, None))
    health = await server.health()
    assert health["ok"] is False
    assert health["upstream"]["kind"] == "tls", health
    assert health["tls"]["caFileStatus"] == "not set"
    assert "set transport.caFile" in health["fix"] and "ca.pem" in health["fix"]


async def test_health_is_red_with_a_missing_ca_file_and_green_once_it_exists(
    service: ReferenceService, started: list[ServerProcess], tmp_path: Path
) -> None:
    later = tmp_path / "later" / "ca.pem"
    server = await start(started, settings(service.url, later))
    health = await server.health()
    assert health["ok"] is False
    assert health["upstream"]["kind"] == "config" and health["tls"]["caFileStatus"] == "missing"
    assert str(later) in health["fix"] and "transport.caFile" in health["fix"]
    assert "endpoint" in health["notices"]
    later.parent.mkdir()
    shutil.copy(service.ca_file or "", later)
    health = await server.health()
    assert health["ok"] is True, health
    assert "endpoint" not in health["notices"]


async def test_health_names_the_base_url_when_the_endpoint_path_is_wrong(
    service: ReferenceService, started: list[ServerProcess]
) -> None:
    server = await start(started, settings(service.base + "/api", service.ca_file))
    health = await server.health()
    assert health["ok"] is False and health["upstream"]["kind"] == "status", health
    assert "/v1" in health["fix"]


async def test_health_says_nothing_listens_when_the_port_is_wrong(
    started: list[ServerProcess], tmp_path: Path
) -> None:
    # A port that was free a moment ago: nothing listens there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await start(started, settings(f"http://127.0.0.1:{port}/v1", None))
    health = await server.health()
    assert health["ok"] is False and health["upstream"]["kind"] == "connect", health
    assert f"127.0.0.1:{port}" in health["fix"] and "endpoint" in health["fix"]


async def test_health_lists_every_settings_problem(
    service: ReferenceService, started: list[ServerProcess]
) -> None:
    bad = settings(service.url, service.ca_file, enpoint="https://x/v1", provider="gpt")
    bad["cache"] = {"l2": "none", "policy": "fifo", "capacity": -1}
    server = await start(started, bad)
    health = await server.health()
    problems = health["settingsProblems"]
    assert len(problems) == 4, problems
    assert any(p.startswith("enpoint: unknown setting") for p in problems)
    assert health["ok"] is True  # the endpoint itself works; the problems are listed anyway


async def test_a_missing_ca_file_is_retried_when_the_same_settings_are_sent_again(
    service: ReferenceService, started: list[ServerProcess], tmp_path: Path
) -> None:
    later = tmp_path / "ca.pem"
    options = settings(service.url, later)
    server = await start(started, options)
    server.open(URI, TEXT)
    assert await server.inline_text(URI, LINE, COLUMN) is None
    shutil.copy(service.ca_file or "", later)
    server.configure(options)  # the very same settings
    assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED


async def test_a_ca_file_that_appears_later_is_picked_up_by_a_later_request(
    service: ReferenceService, started: list[ServerProcess], tmp_path: Path
) -> None:
    later = tmp_path / "ca.pem"
    server = await start(started, settings(service.url, later))
    server.open(URI, TEXT)
    assert await server.inline_text(URI, LINE, COLUMN) is None
    shutil.copy(service.ca_file or "", later)

    async def completes() -> bool:
        return await server.inline_text(URI, LINE, COLUMN) == EXPECTED

    await until("a completion after the CA file appeared", completes)
    messages = [m.message for m in server.messages]
    assert any("cannot use endpoint" in m for m in messages), messages
    assert any("endpoint settings work now" in m for m in messages), messages


async def test_a_metrics_port_in_use_is_retried_when_the_same_settings_are_sent_again(
    service: ReferenceService, started: list[ServerProcess]
) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    options = settings(service.url, service.ca_file, metricsPort=port)
    server = await start(started, options)

    async def refused() -> bool:
        return "metrics" in (await server.stats())["problems"]

    await until("the port-in-use problem", refused)
    holder.close()
    server.configure(options)  # the very same settings

    async def serving() -> str | None:
        url: str | None = (await server.stats()).get("metricsUrl")
        return url

    assert str(port) in await until("the metrics endpoint", serving)
