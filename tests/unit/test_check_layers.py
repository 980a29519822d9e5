"""The layer check: import cycles and imports against the part order fail it, on small trees."""

from __future__ import annotations

from pathlib import Path

from scripts.check_layers import check, cycles, main, read_imports


def tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path -> source) under ``root``, every folder a package."""
    for rel, source in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        for folder in path.relative_to(root).parents:
            if folder != Path("."):
                (root / folder / "__init__.py").touch()
    return root


def layered(root: Path, extra: dict[str, str] | None = None) -> Path:
    """A tree that keeps both rules, plus ``extra`` files."""
    return tree(
        root,
        {
            "lsp_server/__init__.py": "",
            "lsp_server/settings.py": "",
            "lsp_server/cli.py": "from lsp_server.kit import demo\n",
            "lsp_server/documents/document.py": "from lsp_server.settings import X\n",
            "lsp_server/observe/metrics.py": "import transport.backend\n",
            "lsp_server/completion/pipeline.py": (
                "from lsp_server.documents.document import D\n"
                "from lsp_server.observe import metrics\n"
                "import cache.keys\n"
            ),
            "lsp_server/server/language_server.py": "from lsp_server.completion import pipeline\n",
            "lsp_server/kit/demo.py": "from lsp_server.server.language_server import S\n",
            "lsp_server/diagnose/command.py": "from lsp_server.server import language_server\n",
            "cache/keys.py": "",
            "transport/backend.py": "from transport import errors\n",
            "transport/errors.py": "",
            **(extra or {}),
        },
    )


def test_a_tree_that_keeps_the_rules_passes(tmp_path: Path) -> None:
    assert check(layered(tmp_path)) == []
    assert main(["--root", str(tmp_path)]) == 0


def test_a_cycle_of_module_level_imports_fails(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "lsp_server/server/framing.py": "from lsp_server.server.reader import R\n",
            "lsp_server/server/reader.py": "from lsp_server.server.framing import F\n",
        },
    )
    (problem,) = check(root)
    assert problem.startswith(
        "import cycle: lsp_server.server.framing <-> lsp_server.server.reader"
    )
    assert "lsp_server/server/reader.py:1 imports lsp_server.server.framing" in problem
    assert main(["--root", str(root)]) == 1


def test_an_import_of_a_submodule_by_from_package_closes_a_cycle(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "lsp_server/kit/simulate.py": "from lsp_server.kit import report\n",
            "lsp_server/kit/report.py": "from lsp_server.kit import simulate\n",
        },
    )
    assert cycles(read_imports(root)) == [["lsp_server.kit.report", "lsp_server.kit.simulate"]]


def test_a_cycle_hidden_in_a_function_or_under_type_checking_still_fails(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "lsp_server/completion/pipeline.py": "from lsp_server.completion.streams import U\n",
            "lsp_server/completion/streams.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from lsp_server.completion.pipeline import P\n"
            ),
            "transport/auth.py": "def auth_for():\n    from transport.tokens import T\n",
            "transport/tokens.py": "from transport.auth import A\n",
        },
    )
    assert cycles(read_imports(root)) == [
        ["lsp_server.completion.pipeline", "lsp_server.completion.streams"],
        ["transport.auth", "transport.tokens"],
    ]


def test_a_relative_import_is_read_as_the_module_it_names(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "lsp_server/documents/store.py": "from .document import D\nfrom . import syntax\n",
            "lsp_server/documents/syntax.py": "from ..completion import pipeline\n",
        },
    )
    imported = {(i.importer, i.imported) for i in read_imports(root)}
    assert ("lsp_server.documents.store", "lsp_server.documents.document") in imported
    assert ("lsp_server.documents.store", "lsp_server.documents.syntax") in imported
    (problem,) = check(root)
    assert "lsp_server.documents.syntax (documents) imports lsp_server.completion" in problem


def test_documents_and_observe_import_nothing_else_of_lsp_server(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "lsp_server/documents/syntax.py": "from lsp_server.observe.metrics import M\n",
            "lsp_server/observe/endpoint.py": "from lsp_server.server import language_server\n",
        },
    )
    problems = check(root)
    assert len(problems) == 2
    assert problems[0] == (
        "lsp_server/documents/syntax.py:1: lsp_server.documents.syntax (documents) imports "
        "lsp_server.observe.metrics (observe); documents may import settings"
    )
    assert "lsp_server.observe.endpoint (observe) imports lsp_server.server" in problems[1]


def test_a_lower_part_may_not_import_a_higher_one_even_inside_a_function(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {"lsp_server/completion/speculate.py": "def f():\n    import lsp_server.kit.demo\n"},
    )
    (problem,) = check(root)
    assert "lsp_server.completion.speculate (completion) imports lsp_server.kit.demo (kit)" in (
        problem
    )


def test_diagnose_and_kit_stand_side_by_side(tmp_path: Path) -> None:
    root = layered(
        tmp_path, {"lsp_server/diagnose/sample.py": "from lsp_server.kit.demo import x\n"}
    )
    (problem,) = check(root)
    assert "(diagnose) imports lsp_server.kit.demo (kit)" in problem


def test_every_part_may_read_the_settings_model(tmp_path: Path) -> None:
    files = {
        f"lsp_server/{part}/reader.py": "from lsp_server.settings import Settings\n"
        for part in ("documents", "observe", "completion", "server", "diagnose", "kit")
    }
    assert check(layered(tmp_path, files)) == []


def test_a_module_directly_in_lsp_server_that_no_part_claims_fails(tmp_path: Path) -> None:
    root = layered(tmp_path, {"lsp_server/newthing.py": ""})
    (problem,) = check(root)
    assert problem.startswith("lsp_server.newthing: in no part of lsp_server; move it into one of")


def test_cache_and_transport_import_neither_lsp_server_nor_each_other(tmp_path: Path) -> None:
    root = layered(
        tmp_path,
        {
            "cache/store.py": "from lsp_server.settings import S\nimport transport.backend\n",
            "transport/pool.py": "from cache import keys\n",
        },
    )
    problems = check(root)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "cache.store imports lsp_server.settings, but cache may not import lsp_server",
        "cache.store imports transport.backend, but cache may not import transport",
        "transport.pool imports cache.keys, but transport may not import cache",
    ]


def test_data_files_in_a_folder_that_is_no_package_are_not_modules(tmp_path: Path) -> None:
    root = layered(tmp_path)
    (root / "lsp_server" / "samples").mkdir()
    (root / "lsp_server" / "samples" / "retry.py").write_text("import lsp_server.kit.demo\n")
    assert check(root) == []
