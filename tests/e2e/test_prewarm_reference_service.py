"""``scopecache prewarm --reference-service``: the explicit way to fill an L2 without a model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.writer import write_trace
from tests.support.greet import TEXT, URI

pytestmark = pytest.mark.e2e


def test_asked_explicitly_prewarm_fills_a_scratch_l2_from_the_reference_service(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "session.jsonl"
    write_trace(trace, synthesize({URI: TEXT + '"Hello, " + name.title()\n'}, seed=1))
    db = tmp_path / "scratch.sqlite"
    config = tmp_path / "scratch.toml"
    config.write_text(f'[scopecache.cache]\nl2 = "sqlite"\nsqlite_path = "{db}"\n')
    out = subprocess.run(
        [
            sys.executable, "-m", "lsp_server", "prewarm", "--from", str(trace),
            "--config", str(config), "--reference-service", "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["upstreamRequests"] >= 1 and report["l2"]["size"] >= 1
    assert db.exists()
