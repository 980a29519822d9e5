"""The README's and the docs' snippets are what the product accepts.

The quick start's VS Code settings are validated against the extension's
own schema (``contributes.configuration`` in editors/vscode/package.json),
every TOML block parses into the settings model without a problem, the
commands it shows run, the make targets and subcommands it names exist, and
the Embedding example runs as a real language server. The lazy.nvim spec is
loaded by a real Neovim in tests/e2e/test_neovim_readme.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.server.settings_codec import parse_settings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOC_PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE = ROOT / "editors" / "vscode" / "package.json"


def code_blocks(path: Path, *languages: str) -> list[str]:
    """The fenced code blocks of a Markdown file whose info string is one of ``languages``."""
    pattern = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.M | re.S)
    text = path.read_text("utf-8")
    return [m.group(2) for m in pattern.finditer(text) if m.group(1) in languages]


def strip_jsonc(text: str) -> str:
    """VS Code's JSON with comments as plain JSON: no // comments, no trailing commas."""
    comment = re.compile(r'^((?:[^"/]|"(?:\\.|[^"\\])*")*)//.*$')
    lines = [comment.sub(r"\1", line) for line in text.splitlines()]
    return re.sub(r",(\s*[}\]])", r"\1", "\n".join(lines))


def schema_problems(value: Any, schema: dict[str, Any], key: str) -> list[str]:
    """What of ``value`` the configuration schema of ``key`` rejects (the subset VS Code uses)."""
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    checks = {
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "null": lambda v: v is None,
    }
    if not any(checks[kind](value) for kind in kinds):
        return [f"{key}: {value!r} is not {kinds}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{key}: {value!r} not in {schema['enum']}"]
    if "minimum" in schema and isinstance(value, int | float) and value < schema["minimum"]:
        return [f"{key}: {value!r} below {schema['minimum']}"]
    if "items" in schema and isinstance(value, list):
        return [p for item in value for p in schema_problems(item, schema["items"], key)]
    return []


def vscode_settings_problems(block: str) -> list[str]:
    package = json.loads(PACKAGE.read_text("utf-8"))
    properties = package["contributes"]["configuration"]["properties"]
    settings = json.loads(strip_jsonc(block))
    problems = []
    for key, value in settings.items():
        if key not in properties:
            problems.append(f"{key}: not a setting of the extension")
            continue
        problems += schema_problems(value, properties[key], key)
    return problems


def test_the_quick_start_has_one_vscode_settings_block_and_the_extension_accepts_it() -> None:
    (block,) = code_blocks(README, "jsonc")
    assert vscode_settings_problems(block) == []
    assert "scopecache.endpoint" in block  # shown, as optional


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.name)
def test_every_vscode_settings_block_in_the_docs_is_accepted_by_the_extension(page: Path) -> None:
    for block in code_blocks(page, "json", "jsonc"):
        if '"scopecache.' in block:
            assert vscode_settings_problems(block) == [], block


def test_the_schema_check_rejects_an_unknown_key_and_a_wrong_type() -> None:
    block = (
        '{\n  // a comment\n  "scopecache.endpoit": "x",\n'
        '  "scopecache.cache.capacity": "big",\n}'
    )
    assert vscode_settings_problems(block) == [
        "scopecache.endpoit: not a setting of the extension",
        "scopecache.cache.capacity: 'big' is not ['integer']",
    ]


def toml_settings_problems(block: str) -> list[str]:
    data = tomllib.loads(block)
    table = data.get("scopecache", data.get("tool", {}).get("scopecache"))
    assert isinstance(table, dict), block
    return parse_settings(table)[1]


def test_the_quick_start_toml_parses_into_the_settings_model() -> None:
    (block,) = code_blocks(README, "toml")
    data = tomllib.loads(block)["scopecache"]
    settings, problems = parse_settings(data)
    assert problems == []
    assert settings.endpoint == "http://127.0.0.1:8012"


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.name)
def test_every_toml_block_in_the_docs_parses_into_the_settings_model(page: Path) -> None:
    for block in code_blocks(page, "toml"):
        assert toml_settings_problems(block) == [], block


def _scopecache() -> str:
    beside = Path(sys.executable).with_name("scopecache")
    return str(beside) if beside.exists() else "scopecache"


def _readme_commands() -> list[list[str]]:
    """The ``scopecache ... --help`` / ``--version`` commands the README shows."""
    found = []
    for match in re.finditer(r"`(scopecache(?: [a-z-]+)* --(?:help|version))`", README.read_text()):
        found.append(match.group(1).split())
    return found


def test_the_readme_shows_help_commands_and_they_run() -> None:
    commands = _readme_commands()
    assert ["scopecache", "--help"] in commands
    assert ["scopecache", "serve", "--help"] in commands
    for command in commands:
        result = subprocess.run(
            [_scopecache(), *command[1:]], capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, (command, result.stderr)
        assert "usage: scopecache" in result.stdout


def _code() -> str:
    """The README's code: its shell blocks' lines and its inline code spans, one a line."""
    text = README.read_text("utf-8")
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))
    return "\n".join([*code_blocks(README, "sh"), *spans])


def test_every_subcommand_the_readme_names_exists() -> None:
    result = subprocess.run(
        [_scopecache(), "--help"], capture_output=True, text=True, timeout=120, check=True
    )
    choices = set(re.search(r"\{([a-z,]+)\}", result.stdout).group(1).split(","))  # type: ignore[union-attr]
    named = {m.group(1) for m in re.finditer(r"^scopecache ([a-z]+)", _code(), re.M)}
    assert named and named <= choices, named - choices


def test_every_make_target_the_readme_names_exists() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {m.group(1) for m in re.finditer(r"^make ([a-z][a-z-]*)", _code(), re.M)}
    assert named and named <= targets, named - targets


def _embedding_example() -> str:
    text = README.read_text("utf-8")
    section = text[text.index("## Embedding") :]
    section = section[: section.index("\n## ", 1)]
    (block,) = code_blocks_in(section, "python")
    return block


def code_blocks_in(text: str, language: str) -> list[str]:
    pattern = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.M | re.S)
    return [m.group(2) for m in pattern.finditer(text) if m.group(1) == language]


@pytest.mark.e2e
async def test_the_readme_embedding_example_runs_as_a_language_server(tmp_path: Path) -> None:
    example = tmp_path / "embed.py"
    example.write_text(_embedding_example(), encoding="utf-8")
    uri = "file:///host/app.py"
    command = [sys.executable, str(example)]
    async with ServerProcess({"cache": {"l2": "none"}}, command=command) as server:
        server.open(uri, "total = compute\n")
        first = await server.inline_text(uri, 0, 15)
        assert first == " # COMPUTE!"
        assert await server.inline_text(uri, 0, 15) == first
        stats = await server.stats()
        assert stats["served"]["upstream"] == 1
        assert stats["served"]["exact"] == 1
