"""``scopecache diagnose`` as a user runs it, against the real reference service.

The command runs as a real process (``python -m lsp_server diagnose``)
against the reference service over TLS and HTTP/2, by IP and through a real
DNS server (dnsmasq) answering a test name; failures (unreachable endpoint,
untrusted certificate, 401, 404) must each give a failing report with a
hint and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsp_server.diagnose.report import LAYERS
from lsp_server.diagnose.sample import builtin_sample
from lsp_server.kit.reference.engine import count_tokens
from lsp_server.kit.synth.session import sample_files
from lsp_server.observe.stats import ServerStats
from tests.support import dnsmasq
from tests.support.dnsmasq import Dnsmasq
from tests.support.reference import REPO_ROOT, ReferenceService
from transport.prompt import fit_prompt

pytestmark = pytest.mark.e2e

KEY_ENV = "SCOPECACHE_DIAGNOSE_TEST_KEY"
KEY = "diagnose-test-key-7f3a"
ITEM_KEYS = {"name", "value", "unit", "threshold", "verdict", "hint"}
VERDICTS = {"ok", "slow", "failing", "skipped"}


@dataclass
class Run:
    """One finished ``diagnose`` process."""

    code: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data

    def item(self, layer: str, name: str) -> dict[str, Any]:
        for item in self.report["layers"][layer]:
            if item["name"] == name:
                return dict(item)
        raise AssertionError(f"no {name!r} in {layer}: {self.report['layers'][layer]}")


def diagnose(*args: str, env: Mapping[str, str] | None = None) -> Run:
    environ = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    environ.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "diagnose", "--samples", "2", *args],
        capture_output=True, text=True, env=environ, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return Run(proc.returncode, proc.stdout, proc.stderr)


def write_config(path: Path, endpoint: str, **transport: Any) -> Path:
    lines = ["[scopecache]", f'endpoint = "{endpoint}"', f'api_key_env = "{KEY_ENV}"',
             "[scopecache.transport]"]  # fmt: skip
    for key, value in transport.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def service() -> Iterator[ReferenceService]:
    """TLS + HTTP/2, a bearer key, the sample files as corpus (so the sample gets answers)."""
    corpus = [str(p) for p in sample_files()]
    with ReferenceService(
        tls=True, corpus=corpus, ttft_ms=5, token_ms=1, require_key_env=KEY_ENV, env={KEY_ENV: KEY}
    ) as svc:
        yield svc


def assert_every_layer_judged(run: Run) -> None:
    report = run.report
    assert set(report["layers"]) == set(LAYERS)
    for layer in LAYERS:
        items = report["layers"][layer]
        assert items, f"{layer} is empty"
        for item in items:
            assert set(item) == ITEM_KEYS
            assert item["verdict"] in VERDICTS
            if item["verdict"] in ("slow", "failing"):
                assert item["hint"], item


def test_json_report_measures_every_layer_over_tls_http2(
    service: ReferenceService, tmp_path: Path
) -> None:
    stats = ServerStats()
    stats.requests = 4
    stats.record_served("exact", 1.0)
    stats.record_served("upstream", 30.0)
    stats.record_served("upstream", 30.0)
    stats.record_served("typed", 1.0)
    snapshot = stats.snapshot()
    snapshot["acceptance"] = {
        "bySource": {
            "exact": {"retainedChars30s": 45, "measuredChars30s": 50},
            "upstream": {"retainedChars30s": 20, "measuredChars30s": 80},
        },
        "windowsSeconds": [30.0, 120.0],
    }
    stats_file = tmp_path / "stats.json"
    stats_file.write_text(json.dumps(snapshot))
    config = write_config(tmp_path / "s.toml", service.url, ca_file=str(service.ca_file))

    run = diagnose("--config", str(config), "--json", "--metrics-url", str(stats_file),
                   env={KEY_ENV: KEY})  # fmt: skip

    assert run.code == 0, run.stdout
    assert_every_layer_judged(run)
    report = run.report
    assert report["endpoint"] == service.url
    assert report["verdict"] in ("ok", "slow")
    assert run.item("network", "alpn")["value"].startswith("h2")
    assert run.item("network", "tls session resumption")["value"].startswith("resumed")
    assert run.item("network", "tcp+tls set-up")["threshold"] == "< 150 ms"
    # The service counts the fitted prompt's tokens; the report shows that count.
    prefix, suffix = fit_prompt(builtin_sample().prefix, builtin_sample().suffix, 4000, 1000)
    tokens = run.item("encoding", "prompt tokens")
    assert tokens["value"] == count_tokens(prefix) + count_tokens(suffix)
    assert run.item("encoding", "prompt characters")["value"] == len(prefix) + len(suffix)
    assert run.item("encoding", "token inflation")["threshold"] == "< 1.8x"
    for name in ("ttft (p50)", "ttft (p95)", "total (p95)", "chat ttft (p50)"):
        assert isinstance(run.item("service", name)["value"], float), name
    assert run.item("client", "connections opened")["value"] == 1
    overhead = run.item("client", "transport overhead")
    assert overhead["value"] >= 0.0 and "interleaved pairs, 90% bound" in overhead["hint"]
    assert run.item("client", "cache hit ratio")["value"] == pytest.approx(50.0)
    assert run.item("client", "least kept source")["value"] == "upstream (25% kept)"
    assert KEY not in run.stdout + run.stderr


@pytest.mark.skipif(not dnsmasq.available(), reason="dnsmasq is not installed")
def test_name_known_only_to_the_configured_nameservers_is_diagnosed_through_them(
    service: ReferenceService, tmp_path: Path
) -> None:
    name = "completions.test"
    with Dnsmasq({name: "127.0.0.1"}) as dns:
        config = write_config(
            tmp_path / "s.toml",
            f"https://{name}:{service.port}/v1",
            ca_file=str(service.ca_file),
            nameservers=[dns.nameserver],
        )
        run = diagnose("--config", str(config), "--json", env={KEY_ENV: KEY})
        assert dns.queries(name) >= 2  # A and AAAA at least once

    assert run.code == 0, run.stdout
    assert_every_layer_judged(run)
    servers = run.item("network", "dns (transport.nameservers)")
    assert servers["verdict"] in ("ok", "slow") and servers["unit"] == "ms"
    assert run.item("network", "alpn")["value"].startswith("h2")
    assert run.item("encoding", "prompt tokens")["verdict"] == "ok"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_endpoint_gives_a_failing_report_not_a_crash() -> None:
    run = diagnose("--endpoint", f"https://127.0.0.1:{closed_port()}/v1", "--json")
    assert run.code == 2
    assert run.report["verdict"] == "failing"
    tcp = run.item("network", "tcp connect")
    assert tcp["verdict"] == "failing" and "refused" in tcp["hint"]
    assert_every_layer_judged(run)


def test_missing_key_gives_401_report_naming_api_key_env(
    service: ReferenceService, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "s.toml", service.url, ca_file=str(service.ca_file))
    run = diagnose("--config", str(config), "--json")
    assert run.code == 2
    endpoint = run.item("service", "completion endpoint")
    assert endpoint["verdict"] == "failing"
    assert "401" in endpoint["hint"] and "apiKeyEnv" in endpoint["hint"]
    assert f"{KEY_ENV}, which is not set" in endpoint["hint"]
    assert_every_layer_judged(run)


def test_wrong_key_is_reported_without_printing_it(
    service: ReferenceService, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "s.toml", service.url, ca_file=str(service.ca_file))
    wrong = "wrong-key-0d9c1e"
    run = diagnose("--config", str(config), "--json", env={KEY_ENV: wrong})
    assert run.code == 2
    assert f"{KEY_ENV}, which is set" in run.item("service", "completion endpoint")["hint"]
    assert wrong not in run.stdout + run.stderr


def test_untrusted_certificate_points_at_ca_file(service: ReferenceService) -> None:
    run = diagnose("--endpoint", service.url, "--json", env={KEY_ENV: KEY})
    assert run.code == 2
    tls = run.item("network", "tls handshake")
    assert tls["verdict"] == "failing" and "transport.caFile" in tls["hint"]


def test_wrong_base_url_gives_404_report(service: ReferenceService, tmp_path: Path) -> None:
    config = write_config(tmp_path / "s.toml", service.base + "/api", ca_file=str(service.ca_file))
    run = diagnose("--config", str(config), "--json", env={KEY_ENV: KEY})
    assert run.code == 2
    hint = run.item("service", "completion endpoint")["hint"]
    assert "404" in hint and "base URL or provider" in hint


def test_table_output_shows_layers_thresholds_and_verdict(
    service: ReferenceService, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "s.toml", service.url, ca_file=str(service.ca_file))
    run = diagnose("--config", str(config), env={KEY_ENV: KEY})
    assert run.code == 0, run.stdout
    for text in (*LAYERS, "tcp+tls set-up", "< 150 ms", "token inflation", "ttft (p50)"):
        assert text in run.stdout
    assert run.stdout.rstrip().splitlines()[-1] in ("verdict: ok", "verdict: slow")


def test_settings_problems_are_printed_above_the_table(
    service: ReferenceService, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "s.toml", service.url, ca_file=str(service.ca_file))
    config.write_text(config.read_text().replace("[scopecache]\n", "[scopecache]\nenpoint = 1\n"))
    run = diagnose("--config", str(config), env={KEY_ENV: KEY})
    lines = run.stdout.splitlines()
    problem = next(i for i, line in enumerate(lines) if line.startswith("settings:"))
    table = next(i for i, line in enumerate(lines) if "scopecache diagnose" in line)
    assert "enpoint" in lines[problem] and problem < table


@pytest.fixture(scope="module")
def llama_like() -> Iterator[ReferenceService]:
    """Cleartext HTTP/1.1 only, closing after each stream: how llama-server behaves."""
    corpus = [str(p) for p in sample_files()]
    args = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]
    with ReferenceService(tls=False, corpus=corpus, ttft_ms=5, token_ms=1,
                          extra_args=args) as svc:  # fmt: skip
        yield svc


def test_the_protocol_row_reports_what_an_http1_only_server_actually_spoke(
    llama_like: ReferenceService,
) -> None:
    run = diagnose("--endpoint", llama_like.url, "--json")
    assert run.code == 0, run.stdout
    assert_every_layer_judged(run)
    assert run.item("network", "protocol")["value"] == "http/1.1"
    assert run.item("client", "protocol spoken")["value"] == "http/1.1"
    waits = run.item("client", "requests waiting for a connect")
    assert waits["verdict"] == "ok", waits
    assert llama_like.stats()["h2PrefacesRejected"] == 0


def test_http2_required_against_an_http1_only_server_names_the_fix(
    llama_like: ReferenceService, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "s.toml", llama_like.url, http2=True)
    run = diagnose("--config", str(config), "--json")
    assert run.code == 2
    protocol = run.item("network", "protocol")
    assert protocol["verdict"] == "failing"
    assert "speaks HTTP/1.1 only" in protocol["hint"]
    assert "set transport.http2 to auto" in protocol["hint"]
    assert "cannot reach" not in run.stdout
    assert_every_layer_judged(run)
