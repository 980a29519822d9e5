"""The scope probe on real-world files: 90% of answers survive an edit of the definition above.

In every core language, on ordinary source files of published packages
(``tests.support.real_world``: pinned by SHA-256, fetched from the package
registries once and cached outside the clone), a line is cut in the middle
of a definition and an answer stored for it; the definition above is edited;
at least 90% of the answers must still be served at the same place
(``tests.support.scope_probe``). Two shapes: only the rest of the line is
cut, and the rest of the definition is not written yet, where error
recovery reshapes the tree most. ``python -m tests.bench.bench_scope_probe``
prints the figures per file.

Where the sources cannot be fetched the test is skipped with the reason,
except in CI (``CI`` set), where that is a failure: CI must run it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.real_world import SOURCES, cache_dir, fetch
from tests.support.scope_probe import SHAPES, probe_file

LANGUAGES = ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp")
BAR = 0.9


@pytest.fixture(scope="module")
def real_world() -> dict[str, list[Path]]:
    """The real-world files of each core language, fetched once."""
    files, problems = fetch(SOURCES, cache_dir())
    if problems:
        reason = "real-world sources not available: " + "; ".join(problems)
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    by_language: dict[str, list[Path]] = {}
    for source, path in files:
        by_language.setdefault(source.language, []).append(path)
    return by_language


def test_every_core_language_has_real_world_sources() -> None:
    assert {s.language for s in SOURCES} >= set(LANGUAGES)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_answers_survive_an_edit_of_the_definition_above_in_real_world_files(
    real_world: dict[str, list[Path]], language: str, shape: str
) -> None:
    probes = [p for path in real_world[language] for p in probe_file(path, shape)]
    assert len(probes) >= 20, "too few definitions to probe"
    lost = [f"line {p.line + 1} {p.prefix.strip()!r}: {p.why}" for p in probes if not p.kept]
    assert len(probes) - len(lost) >= BAR * len(probes), lost
