"""Secrets stay on the machine: excluded files, the API key, TLS and the metrics port.

Every test runs the real ``scopecache serve`` against the real reference
service over TLS and then looks at what actually left the process (the
service's request counters) and what it wrote (log, trace, SQLite L2 files).
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess, default_command
from tests.support.conditions import until_true
from tests.support.greet import CORPUS, EXPECTED
from tests.support.greet import TEXT as APP_TEXT
from tests.support.greet import URI as APP
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

KEY_ENV = "SCOPECACHE_TEST_KEY"
#: documents the default ``exclude`` globs keep local, each with its content
EXCLUDED = [
    "file:///work/project/.env",
    "file:///work/project/.env.production",
    "file:///work/project/certs/server.pem",
    "file:///work/project/tls/private.key",
    "file:///home/dev/.ssh/id_rsa",
    "file:///home/dev/.ssh/id_ed25519.pub",
    "file:///home/dev/.netrc",
    "file:///work/project/secrets/db.py",
    "file:///work/project/config/.secrets/token.py",
]


def options(svc: ReferenceService, workdir: Path, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": svc.url,
        "model": "m",
        "transport": {"caFile": str(svc.ca_file), "keepWarmSeconds": 0},
        "cache": {"l2": "sqlite", "sqlitePath": str(workdir / "l2.sqlite")},
        "speculative": {"enabled": False},
        **extra,
    }


def files_containing(root: Path, needle: bytes) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def test_excluded_files_are_never_sent_cached_or_recorded(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    marker = f"excluded-content-{uuid.uuid4().hex}"
    trace = tmp_path / "session.trace"
    command = [*default_command(), "--record-trace", str(trace)]
    opts = options(upstream, tmp_path, recordText=True)
    async with ServerProcess(opts, command=command, log_file=tmp_path / "server.log") as server:
        for uri in EXCLUDED:
            server.open(uri, f"def greet(name):\n    message = {marker!r}\n    value = ")
            server.insert(uri, 2, 12, "x")
            assert await server.inline_text(uri, 2, 13) is None
            assert not (await server.complete(uri, 1, 14)).items
        assert upstream.completion_requests() == 0
        stats = await server.stats()
        assert stats["cache"]["size"] == 0 and stats["upstreamRequests"] == 0
        # The same text in an ordinary file does go upstream: the set-up works.
        server.open(APP, APP_TEXT)
        assert await server.inline_text(APP, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 1
        for uri in EXCLUDED:
            server.close(uri)
    assert trace.exists(), "serve --record-trace wrote no trace"
    recorded = trace.read_text()
    assert APP in recorded
    for uri in EXCLUDED:
        assert uri not in recorded
    assert files_containing(tmp_path, marker.encode()) == []


async def test_exclude_globs_are_configurable(upstream: ReferenceService, tmp_path: Path) -> None:
    async with ServerProcess(options(upstream, tmp_path, exclude=["**/vendor/**"])) as server:
        vendored = "file:///work/project/vendor/greet.py"
        server.open(vendored, APP_TEXT)
        assert await server.inline_text(vendored, 1, 14) is None
        assert upstream.completion_requests() == 0
        server.configure({"exclude": ["*.py"]})
        server.open(APP, APP_TEXT)
        assert await server.inline_text(APP, 1, 14) is None
        assert upstream.completion_requests() == 0
        server.configure({"exclude": []})
        assert await server.inline_text(vendored, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 1


async def test_api_key_reaches_the_service_and_nothing_written_contains_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    marker = f"sk-test-{uuid.uuid4().hex}"
    corpus = tmp_path_factory.mktemp("keyed-corpus") / "greet.py"
    corpus.write_text(CORPUS)
    workdir = tmp_path_factory.mktemp("keyed-run")
    env = {KEY_ENV: marker}
    with ReferenceService(tls=True, corpus=[corpus], env=env, require_key_env=KEY_ENV) as svc:
        trace = workdir / "session.trace"
        command = [*default_command(), "--record-trace", str(trace)]
        opts = options(svc, workdir, apiKeyEnv=KEY_ENV, recordText=True)
        async with ServerProcess(
            opts,
            command=command,
            env={**os.environ, **env},
            log_file=workdir / "server.log",
            log_level="DEBUG",
        ) as server:
            server.open(APP, APP_TEXT)
            # Served: the service accepted the marker as the bearer token.
            assert await server.inline_text(APP, 1, 14) == EXPECTED
            assert svc.completion_requests() == 1
            # Errors: a rejected request and a server error, both logged.
            for number, status in enumerate((401, 500)):
                svc.set_fault("status", 1, status=status)
                uri = f"file:///work/project/fails{number}.py"
                server.open(uri, f"def fails{number}(name):\n    message = ")
                assert await server.inline_text(uri, 1, 14) is None
            # A settings change rebuilds the client (and re-reads the key).
            server.configure({"model": "m2", "completion": {"maxTokens": 32}})
            # Handled in order: this answer comes after the rebuild, which
            # started the new model's namespace with an empty L1.
            assert (await server.stats())["cache"]["size"] == 0
            server.insert(APP, 1, 14, " ")
            await server.inline_text(APP, 1, 15)
            stats = await server.stats()
            assert stats["upstreamErrors"] == 2
        assert svc.completion_requests() == 4
    # The service checks the key itself: a wrong key is refused.
    with ReferenceService(tls=True, corpus=[corpus], env=env, require_key_env=KEY_ENV) as svc:
        wrong = {**os.environ, KEY_ENV: "not-the-key"}
        opts = options(svc, workdir / "wrong", apiKeyEnv=KEY_ENV)
        async with ServerProcess(opts, env=wrong) as refused:
            refused.open(APP, APP_TEXT)
            assert await refused.inline_text(APP, 1, 14) is None
    written = sorted(p.name for p in workdir.rglob("*") if p.is_file())
    assert "server.log" in written and "session.trace" in written
    assert any(name.startswith("l2.sqlite") for name in written)
    assert files_containing(workdir, marker.encode()) == []


async def test_tls_verification_is_on_by_default_and_off_only_when_asked(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    untrusted = options(upstream, tmp_path)
    del untrusted["transport"]["caFile"]  # the service's self-signed CA is not trusted
    async with ServerProcess(untrusted, log_file=tmp_path / "verify.log") as server:
        server.open(APP, APP_TEXT)
        assert await server.inline_text(APP, 1, 14) is None
        assert (await server.stats())["upstreamErrors"] >= 1
    assert upstream.completion_requests() == 0
    assert "verification is OFF" not in (tmp_path / "verify.log").read_text()

    insecure = {**untrusted, "transport": {"verifyTls": False, "keepWarmSeconds": 0}}
    insecure["cache"] = {"l2": "none"}
    async with ServerProcess(insecure, log_file=tmp_path / "insecure.log") as server:
        server.open(APP, APP_TEXT)
        assert await server.inline_text(APP, 1, 14) == EXPECTED
    log = (tmp_path / "insecure.log").read_text()
    assert "WARNING" in log and "TLS certificate verification is OFF" in log


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a listening TCP socket on ``port`` (from /proc/net)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if int(port_hex, 16) == port and fields[3] == "0A":
                found.add(address)
    return found


async def test_metrics_port_listens_on_loopback_only(tmp_path: Path) -> None:
    port = free_port()
    command = [*default_command(), "--metrics-port", str(port)]
    async with ServerProcess({"cache": {"l2": "none"}}, command=command) as server:
        await until_true(lambda: bool(listening_addresses(port)), "the metrics port to listen")
        # 0100007F is 127.0.0.1 in /proc/net/tcp's byte order
        assert listening_addresses(port) == {"0100007F"}
        stats = await server.stats()
        assert stats.get("metricsUrl", "").startswith(f"http://127.0.0.1:{port}")
