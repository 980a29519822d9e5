"""Packaging metadata: what a build of the distribution says about itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_license_is_an_spdx_expression_so_setuptools_does_not_warn() -> None:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert data["project"]["license"] == "MIT"
    # SPDX strings need setuptools 77; an older build backend would reject them.
    assert "setuptools>=77" in data["build-system"]["requires"]
