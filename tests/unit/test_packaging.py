"""Packaging metadata: what a build of the distribution says about itself."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_license_is_an_spdx_expression_so_setuptools_does_not_warn() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["license"] == "MIT"
    # SPDX strings need setuptools 77; an older build backend would reject them.
    assert "setuptools>=77" in data["build-system"]["requires"]


def test_the_version_has_one_source_the_servers_own() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert "version" not in data["project"]
    assert data["project"]["dynamic"] == ["version"]
    attr = data["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "lsp_server.server.language_server.__version__"


def test_the_vscode_extension_has_the_servers_version() -> None:
    # the extension bundles the server's wheel and replaces its private
    # environment when its own version changes: the two move together
    from lsp_server.server.language_server import __version__

    package = json.loads((PYPROJECT.parent / "editors/vscode/package.json").read_text("utf-8"))
    assert package["version"] == __version__


def test_building_and_installing_the_wheel_needs_only_the_dev_extra() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    dev = data["project"]["optional-dependencies"]["dev"]
    names = {req.split(">")[0].split("=")[0] for req in dev}
    assert {"build", "pipx", "twine"} <= names
