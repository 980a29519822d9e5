"""Packaging metadata: what a build of the distribution says about itself."""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from pathlib import Path
from types import ModuleType

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


def requirement_names(requirements: list[str]) -> set[str]:
    """The distribution names of PEP 508 requirement strings, normalized."""
    names = set()
    for req in requirements:
        name = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]
        names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


#: the reference service's certificate tooling: never in an editor's install
TLS_TOOLING = {"trustme", "cryptography"}


def load_package_vsix() -> ModuleType:
    path = PYPROJECT.parent / "editors/vscode/scripts/package_vsix.py"
    spec = importlib.util.spec_from_file_location("package_vsix", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_core_dependencies_carry_no_certificate_tooling() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert not requirement_names(project["dependencies"]) & TLS_TOOLING


def test_the_tls_extra_is_in_all_and_dev_so_demo_and_tests_have_it() -> None:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert requirement_names(extras["tls"]) == {"trustme"}
    assert set(extras["tls"]) <= set(extras["all"])
    assert set(extras["tls"]) <= set(extras["dev"])


def test_the_vsix_installs_extras_without_certificate_tooling() -> None:
    package_vsix = load_package_vsix()
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    for extra in package_vsix.EXTRAS.split(","):
        assert not requirement_names(extras[extra.strip()]) & TLS_TOOLING, extra
    assert package_vsix.NOT_FOR_EDITORS >= TLS_TOOLING


def test_the_vsix_build_spots_certificate_tooling_among_its_wheels(tmp_path: Path) -> None:
    package_vsix = load_package_vsix()
    for name in (
        "trustme-1.2.1-py3-none-any.whl",
        "cryptography-46.0.3-cp311-abi3-manylinux_2_28_x86_64.whl",
        "h2-4.3.0-py3-none-any.whl",
        "tree_sitter_python-0.23.6-cp39-abi3-manylinux_2_17_x86_64.whl",
    ):
        (tmp_path / name).touch()
    assert package_vsix.unwanted_wheels(tmp_path) == [
        "cryptography-46.0.3-cp311-abi3-manylinux_2_28_x86_64.whl",
        "trustme-1.2.1-py3-none-any.whl",
    ]


def test_transport_holds_no_reference_service() -> None:
    transport = PYPROJECT.parent / "transport"
    assert not (transport / "reference").exists()
    sources = {path: path.read_text(encoding="utf-8") for path in transport.rglob("*.py")}
    serving = [
        str(path.relative_to(transport))
        for path, text in sources.items()
        if re.search(r"^\s*(from|import) (hypercorn|trustme)\b", text, re.M)
        or "ReferenceApp" in text
    ]
    assert serving == []
    assert (PYPROJECT.parent / "lsp_server/kit/reference/app.py").exists()
