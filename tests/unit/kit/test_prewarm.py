"""``scopecache prewarm`` fills a shared cache only from a service someone chose."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.cli import main
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.writer import write_trace
from tests.support.greet import TEXT, URI


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    write_trace(path, synthesize({URI: TEXT}, seed=1))
    return path


def stderr_of(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_without_an_endpoint_prewarm_refuses_and_says_what_to_give(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "l2.sqlite"
    config = tmp_path / "team.toml"
    config.write_text(f'[scopecache.cache]\nl2 = "sqlite"\nsqlite_path = "{db}"\n')
    assert main(["prewarm", "--from", str(trace), "--config", str(config)]) == 2
    message = stderr_of(capsys)
    assert "--endpoint" in message and "--reference-service" in message
    assert not db.exists()  # nothing was filled, nothing was started


def test_an_endpoint_and_reference_service_together_are_refused(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["prewarm", "--from", str(trace), "--endpoint", "http://127.0.0.1:9/v1"]
    assert main([*args, "--reference-service"]) == 2
    assert "--reference-service starts a service of its own" in stderr_of(capsys)


def test_an_endpoint_in_the_config_file_counts_as_chosen(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "team.toml"
    config.write_text('[scopecache]\nendpoint = "http://127.0.0.1:9/v1"\n')
    code = main(["prewarm", "--from", str(trace), "--config", str(config), "--reference-service"])
    assert code == 2
    assert "--reference-service starts a service of its own" in stderr_of(capsys)
