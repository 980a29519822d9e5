"""The VS Code extension's checks that run without VS Code.

- the generated settings schema (editors/vscode/settings-schema.json and
  package.json's contributes.configuration) matches lsp_server.settings;
- the Node end-to-end test starts the real language server from the
  extension's own server options (as vscode-languageclient would), drives it
  over stdio with vscode-languageserver-protocol, configured by the
  extension's own initializationOptions builder, against a reference service
  it starts.

The extension inside a real VS Code is tested in test_vscode_code_server.py.

The Node test needs ``npm ci`` in editors/vscode first (make does it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"


def test_vscode_settings_schema_matches_the_server_settings_model() -> None:
    result = subprocess.run(
        [sys.executable, "scripts/settings_schema.py", "--check"],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_vscode_client_end_to_end_against_the_real_server() -> None:
    npm = shutil.which("npm")
    if npm is None or not (EXTENSION / "node_modules").is_dir():
        pytest.skip("run `npm ci` in editors/vscode first")
    beside = Path(sys.executable).with_name("scopecache")
    exe = str(beside) if beside.exists() else "scopecache"
    env = dict(os.environ)
    env["SCOPECACHE_SERVER"] = f"{exe} serve"
    env["SCOPECACHE_UPSTREAM"] = f"{exe} upstream"
    for script in ("compile", "test:e2e"):
        result = subprocess.run(
            [npm, "run", "--silent", script],
            cwd=EXTENSION,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"npm run {script}\n{result.stdout}\n{result.stderr}"
    assert "# fail 0" in result.stdout, result.stdout
