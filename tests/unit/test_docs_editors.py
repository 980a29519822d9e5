"""The editors' docs agree with the editors.

Every Neovim option is listed with its default; the VS Code README names
only settings and commands the extension has.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEOVIM = ROOT / "editors" / "neovim"
VSCODE = ROOT / "editors" / "vscode"
LANGUAGES = (
    "Python", "JavaScript", "TypeScript", "TSX", "Go", "Rust", "Java",
    "C", "C++", "C#", "Ruby", "PHP", "Lua",
)  # fmt: skip


def neovim_defaults() -> dict[str, str]:
    """``M.defaults`` of the plugin's config.lua: option name -> its default as written."""
    source = (NEOVIM / "lua" / "scopecache" / "config.lua").read_text("utf-8")
    block = source[source.index("M.defaults = {") : source.index("\n}\n")]
    return dict(re.findall(r"^  (\w+) = (.+?),?$", block, re.M))


def test_the_plugin_has_the_twelve_options_the_docs_list() -> None:
    assert len(neovim_defaults()) == 12


@pytest.mark.parametrize("option", sorted(neovim_defaults()))
def test_the_neovim_readme_lists_every_option_with_its_default(option: str) -> None:
    default = neovim_defaults()[option]
    rows = [
        line for line in (NEOVIM / "README.md").read_text("utf-8").splitlines()
        if line.startswith(f"| `{option}` |")
    ]  # fmt: skip
    assert len(rows) == 1, option
    if not default.startswith("require("):  # filetypes: generated, described in words
        assert f"`{default}`" in rows[0], (option, default, rows[0])


@pytest.mark.parametrize("option", sorted(neovim_defaults()))
def test_the_neovim_help_documents_every_option_with_its_default(option: str) -> None:
    default = neovim_defaults()[option]
    text = (NEOVIM / "doc" / "scopecache.txt").read_text("utf-8")
    entry = re.search(rf"^{option} +\((.*?)\)$", text, re.M | re.S)
    assert entry is not None, option
    if not default.startswith("require("):
        assert f"default `{default}`" in entry.group(1), (option, entry.group(1))


def test_the_vscode_readme_names_only_settings_and_commands_the_extension_has() -> None:
    contributes = json.loads((VSCODE / "package.json").read_text("utf-8"))["contributes"]
    known = set(contributes["configuration"]["properties"])
    known |= {command["command"] for command in contributes["commands"]}
    text = (VSCODE / "README.md").read_text("utf-8")
    named = set(re.findall(r"`(scopecache\.[A-Za-z.]+[A-Za-z])`", text))
    assert "scopecache.endpoint" in named
    assert named <= known, named - known


EDITOR_READMES = [NEOVIM / "README.md", VSCODE / "README.md"]


@pytest.mark.parametrize("readme", EDITOR_READMES, ids=["neovim", "vscode"])
def test_the_editor_readmes_name_the_fourteen_languages_and_no_tls_endpoint_without_its_ca(
    readme: Path,
) -> None:
    text = readme.read_text("utf-8")
    assert "14 languages" in text
    assert all(language in text for language in LANGUAGES)
    assert "open a Python file" not in text
    assert "127.0.0.1:8443" not in text  # the reference service's TLS port: it needs its CA
