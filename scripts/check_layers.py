"""The import rules of ``lsp_server``, ``cache`` and ``transport``, checked (``make lint``).

Two rules, read from the code's own ``import`` statements (``ast``, nothing
is imported or run):

1. No import cycle anywhere in the three packages. Every import counts:
   at module level, inside a function, and under ``if TYPE_CHECKING:``;
   ``from pkg import name`` is an import of ``pkg.name`` when that is a
   module, else of ``pkg``. A cycle is broken by moving what both sides
   need into the lower module, never by hiding one import in a function.
2. Arrows point one way. ``cache`` and ``transport`` import neither
   ``lsp_server`` nor each other. Inside ``lsp_server`` each module belongs
   to a part, by its folder (``lsp_server/completion/...`` is
   ``completion``), and a part imports only itself and the parts that
   ``MAY_IMPORT`` lists for it. The settings model is readable by all.

A module directly in ``lsp_server/`` that ``TOP_LEVEL`` does not name is
reported too: it belongs in a part's folder.

    python scripts/check_layers.py [--root DIR]

Exit status 0 when both rules hold, 1 with one line per problem otherwise.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: the three packages, and which of the others each may import
PACKAGES: Mapping[str, tuple[str, ...]] = {
    "lsp_server": ("cache", "transport"),
    "cache": (),
    "transport": (),
}

#: imports across packages that are known to break the rule, each with why it stands;
#: (importing package, imported module). Keep this empty: an entry is a debt.
EXCEPTIONS: Mapping[tuple[str, str], str] = {
    ("cache", "transport.tasks"): "stop_tasks (the CPython 3.11 lost-cancel workaround) "
    "is shared by cache's L2 loops and transport; it wants a home both may import",
}

#: what each part of lsp_server may import besides itself
_BELOW_SERVER = ("settings", "documents", "observe", "completion", "server")
MAY_IMPORT: Mapping[str, tuple[str, ...]] = {
    "settings": (),
    "documents": ("settings",),
    "observe": ("settings",),
    "completion": ("settings", "documents", "observe"),
    "server": ("settings", "documents", "observe", "completion"),
    "diagnose": _BELOW_SERVER,
    "kit": _BELOW_SERVER,
    "cli": ("settings", "documents", "observe", "completion", "server", "diagnose", "kit"),
}

#: the modules directly in lsp_server/, and the part each stands for
TOP_LEVEL: Mapping[str, str] = {
    "lsp_server": "server",  # create_server, the embedding entry point
    "lsp_server.__main__": "cli",
    "lsp_server.cli": "cli",
    "lsp_server.settings": "settings",
}


@dataclass(frozen=True, slots=True)
class Import:
    """One import of one module by another, where it is written."""

    importer: str
    imported: str
    path: str
    line: int

    def where(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"


def modules_under(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by dotted name.

    A ``.py`` file in a folder that is no package is data, not a module.
    """
    found: dict[str, Path] = {}
    for package in packages:
        base = root / package
        if not (base / "__init__.py").is_file():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(root)
            if not all((root / p / "__init__.py").is_file() for p in rel.parents if p != Path(".")):
                continue  # data shipped as .py files (lsp_server/samples)
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, path: Path, root: Path, known: Mapping[str, Path]) -> list[Import]:
    """What ``module`` imports of ``known``, wherever in the file the import is written."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(root).as_posix()
    is_package = path.name == "__init__.py"
    out: list[Import] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, is_package, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                targets.append(sub if sub in known else source)
        else:
            continue
        for target in targets:
            # ``import a.b.c`` names a.b.c; fall back to its longest known prefix
            name = target
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.append(Import(module, name, rel, node.lineno))
    return out


def read_imports(root: Path, packages: Iterable[str] = PACKAGES) -> list[Import]:
    """Every import among the modules of ``packages`` under ``root``."""
    known = modules_under(root, packages)
    found: list[Import] = []
    for module, path in known.items():
        found.extend(imports_of(module, path, root, known))
    return found


def cycles(imports: Sequence[Import]) -> list[list[str]]:
    """The groups of modules that import each other in a loop, each sorted (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative, so a deep import chain cannot hit the recursion limit
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def part_of(module: str) -> str | None:
    """The part of ``lsp_server`` that ``module`` belongs to (None: in no part)."""
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    pieces = module.split(".")
    if len(pieces) >= 2 and pieces[1] in MAY_IMPORT:
        return pieces[1]
    return None


def layer_problems(imports: Sequence[Import], modules: Iterable[str]) -> list[str]:
    """Imports against the package and part order, and modules of lsp_server in no part."""
    problems = [
        f"{module}: in no part of lsp_server; move it into one of "
        + ", ".join(f"lsp_server/{p}/" for p in MAY_IMPORT if p not in ("settings", "cli"))
        for module in sorted(modules)
        if module.split(".")[0] == "lsp_server" and part_of(module) is None
    ]
    for imp in imports:
        src_pkg, dst_pkg = imp.importer.split(".")[0], imp.imported.split(".")[0]
        if src_pkg != dst_pkg:
            allowed = dst_pkg in PACKAGES.get(src_pkg, ())
            if not allowed and (src_pkg, imp.imported) not in EXCEPTIONS:
                problems.append(
                    f"{imp.where()}: {imp.importer} imports {imp.imported}, "
                    f"but {src_pkg} may not import {dst_pkg}"
                )
            continue
        if src_pkg != "lsp_server":
            continue
        src, dst = part_of(imp.importer), part_of(imp.imported)
        if src is None or dst is None or src == dst:
            continue
        if dst not in MAY_IMPORT[src]:
            may = ", ".join(MAY_IMPORT[src]) or "nothing else of lsp_server"
            problems.append(
                f"{imp.where()}: {imp.importer} ({src}) imports {imp.imported} ({dst}); "
                f"{src} may import {may}"
            )
    return problems


def check(root: Path) -> list[str]:
    """Every problem of the tree at ``root``, one line each (empty: both rules hold)."""
    modules = modules_under(root, PACKAGES)
    imports = read_imports(root)
    problems = layer_problems(imports, modules)
    for group in cycles(imports):
        members = set(group)
        ties = [i for i in imports if i.importer in members and i.imported in members]
        problems.append(
            "import cycle: "
            + " <-> ".join(group)
            + " ("
            + "; ".join(f"{i.where()} imports {i.imported}" for i in ties)
            + ")"
        )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Check the tree; print the problems or a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    problems = check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    count = len(modules_under(args.root, PACKAGES))
    print(f"layers: {count} modules, no import cycle, every import points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
