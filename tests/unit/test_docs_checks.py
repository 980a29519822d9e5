"""scripts/check_docs.py and scripts/settings_doc.py: what `make lint` checks in the docs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def check_docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The checker, pointed at a scratch tree."""
    module = _script("check_docs")
    (tmp_path / "docs").mkdir()
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "README", tmp_path / "README.md")
    return module


def test_the_tree_passes_both_checks() -> None:
    assert _script("check_docs").problems() == []
    assert _script("settings_doc").main(["--check"]) == 0


def test_a_link_to_a_missing_file_or_heading_is_reported(check_docs: ModuleType) -> None:
    page = check_docs.ROOT / "docs" / "a.md"
    page.write_text(
        "# A\n\n## Two words\n\n[ok](#two-words) [gone](b.md) [bad](#three) [up](../README.md)\n"
        "```sh\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    (check_docs.ROOT / "README.md").write_text("# R\n", encoding="utf-8")
    assert check_docs.link_problems(page) == [
        "docs/a.md:5: b.md: no such file",
        "docs/a.md:5: #three: no heading #three in a.md",
    ]


def test_a_commit_hash_is_reported_and_plain_words_and_numbers_are_not(
    check_docs: ModuleType,
) -> None:
    page = check_docs.ROOT / "docs" / "a.md"
    page.write_text("measured at `4f4a070`; 1234567 keys; a decade; #ff00aa\n", encoding="utf-8")
    assert check_docs.hash_problems(page) == ["docs/a.md:1: 4f4a070 looks like a commit hash"]


def test_a_long_readme_a_late_quick_start_and_a_relative_image_are_reported(
    check_docs: ModuleType,
) -> None:
    lines = ["# R", "![shot](docs/shot.png)", *["text"] * 400, "llama-server", "ollama"]
    lines += ["```jsonc", "{}", "```", "```lua", "{}", "```"]
    (check_docs.ROOT / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    problems = check_docs.readme_problems()
    assert problems[0] == "README.md: 410 lines, at most 400"
    assert "README.md: 'llama-server' not in its first 200 lines" in problems
    assert any("image docs/shot.png needs an absolute https URL" in p for p in problems)
