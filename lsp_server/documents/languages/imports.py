"""``ImportRules``: what a file imports and where the imported definitions are, per language.

Cross-file context (``lsp_server.documents.cross_file``) sends the
definitions of the names a document imports, when the file defining them is
open. What an import is differs by language; a ``LanguageSpec`` carries the
rules for its own (``LanguageSpec.imports``), and languages that share a
module system share one ``ImportRules`` object, so a TypeScript file finds
the definitions in an open JavaScript file and the other way round:

* **Python** (``PYTHON_IMPORTS``): ``import a.b`` (every top-level definition
  of ``a/b.py``) and ``from a.b import x, y`` (those of ``x`` and ``y``);
  relative imports (``from .b import x``) resolve beside the importer.
  Modules are matched by their dotted names, from any directory depth.
* **JavaScript / TypeScript** (``JS_IMPORTS``): ``import { x, y as z } from
  './b'`` (``x`` and ``y``), ``import d from './b'`` (the default export),
  ``import * as b from './b'`` (everything). Only relative paths resolve
  (packages are not open documents); ``./b`` matches ``b.ts``, ``b.js`` ...
  and ``b/index.*``. Definitions are the top-level functions, classes,
  ``const``/``let``/``var`` declarators, interfaces, type aliases and enums,
  exported or not.
* **Go** (``GO_IMPORTS``): ``import "example.com/shop/shapes"`` imports the
  package: the exported (capitalized) top-level functions, methods and types
  of the open files in a directory whose path ends with the import path's
  last elements (the longest such match; no ``go.mod`` is read).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from tree_sitter import Node


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module and the names taken from it (empty: all of them)."""

    module: str
    names: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False)
class ImportRules:
    """How one module system names files, reads imports and finds definitions."""

    #: the imports among a tree's top-level nodes
    read_imports: Callable[[Node], Iterator[Import]]
    #: (name, node) of a tree's top-level definitions, the node being the text to send
    read_definitions: Callable[[Node], Iterator[tuple[str, Node]]]
    #: the keys a file at this path can be imported by
    module_keys: Callable[[str], Iterator[str]]
    #: the keys an import from the file at a path may mean, most specific first
    resolve: Callable[[str, str], Iterator[str]]


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _named(node: Node, field: str = "name") -> str:
    return _text(node.child_by_field_name(field))


# -- Python -------------------------------------------------------------------

_PY_DEFINITIONS = ("function_definition", "class_definition")


def _python_imports(root: Node) -> Iterator[Import]:
    for node in root.children:
        if node.type == "import_from_statement":
            module = _named(node, "module_name")
            if not module:
                continue
            names = set()
            for name in node.children_by_field_name("name"):
                if name.type == "aliased_import":
                    names.add(_named(name))
                else:
                    names.add(_text(name))
            yield Import(module, frozenset(names - {""}))
        elif node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                target = name.child_by_field_name("name") if name.type == "aliased_import" else name
                if _text(target):
                    yield Import(_text(target))


def _python_definitions(root: Node) -> Iterator[tuple[str, Node]]:
    for node in root.children:
        definition = node
        if node.type == "decorated_definition":
            definition = node.child_by_field_name("definition") or node
        if definition.type in _PY_DEFINITIONS and _named(definition):
            yield _named(definition), node


def _python_module_keys(path: str) -> Iterator[str]:
    parts = PurePosixPath(path).with_suffix("").parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    for i in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[i:])


def _python_resolve(module: str, importer: str) -> Iterator[str]:
    if not module.startswith("."):
        yield module
        return
    dots = len(module) - len(module.lstrip("."))
    parents = PurePosixPath(importer).parents
    if dots > len(parents):
        return
    base = parents[dots - 1]
    rest = module.lstrip(".")
    dotted = ".".join(base.parts[1:]) if base.parts else ""
    yield ".".join(p for p in (dotted, rest) if p)


PYTHON_IMPORTS = ImportRules(
    read_imports=_python_imports,
    read_definitions=_python_definitions,
    module_keys=_python_module_keys,
    resolve=_python_resolve,
)


# -- JavaScript / TypeScript --------------------------------------------------

_JS_EXTENSIONS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_JS_NAMED = frozenset({
    "function_declaration", "generator_function_declaration", "class_declaration",
    "abstract_class_declaration", "interface_declaration", "type_alias_declaration",
    "enum_declaration",
})
_JS_VARIABLES = frozenset({"lexical_declaration", "variable_declaration"})


def _string_value(node: Node | None) -> str:
    text = _text(node)
    return text[1:-1] if len(text) >= 2 and text[0] in "'\"`" else text


def _js_imports(root: Node) -> Iterator[Import]:
    for node in root.children:
        if node.type != "import_statement":
            continue
        module = _string_value(node.child_by_field_name("source"))
        clause = next((c for c in node.children if c.type == "import_clause"), None)
        if not module or clause is None:
            continue
        names: set[str] = set()
        everything = False
        for part in clause.children:
            if part.type == "identifier":
                names.add("default")
            elif part.type == "namespace_import":
                everything = True
            elif part.type == "named_imports":
                for spec in part.children:
                    if spec.type == "import_specifier" and _named(spec):
                        names.add(_named(spec))
        yield Import(module, frozenset() if everything else frozenset(names))


def _js_declared(node: Node) -> Iterator[str]:
    if node.type in _JS_NAMED and _named(node):
        yield _named(node)
    elif node.type in _JS_VARIABLES:
        for declarator in node.children:
            if declarator.type == "variable_declarator":
                name = declarator.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    yield _text(name)


def _js_definitions(root: Node) -> Iterator[tuple[str, Node]]:
    for node in root.children:
        declaration = node
        if node.type == "export_statement":
            declaration = node.child_by_field_name("declaration") or node.child_by_field_name(
                "value"
            ) or node
            if any(c.type == "default" for c in node.children):
                yield "default", node
        for name in _js_declared(declaration):
            yield name, node


def _js_module_keys(path: str) -> Iterator[str]:
    stem, extension = posixpath.splitext(path)
    if extension not in _JS_EXTENSIONS:
        return
    yield stem
    if posixpath.basename(stem) == "index":
        yield posixpath.dirname(stem)


def _js_resolve(module: str, importer: str) -> Iterator[str]:
    if not module.startswith("."):
        return
    target = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
    stem, extension = posixpath.splitext(target)
    yield stem if extension in _JS_EXTENSIONS else target


JS_IMPORTS = ImportRules(
    read_imports=_js_imports,
    read_definitions=_js_definitions,
    module_keys=_js_module_keys,
    resolve=_js_resolve,
)


# -- Go -----------------------------------------------------------------------


def _go_imports(root: Node) -> Iterator[Import]:
    for node in root.children:
        if node.type != "import_declaration":
            continue
        specs = [c for c in node.children if c.type == "import_spec"]
        for group in (c for c in node.children if c.type == "import_spec_list"):
            specs += [c for c in group.children if c.type == "import_spec"]
        for spec in specs:
            path = _string_value(spec.child_by_field_name("path"))
            if path:
                yield Import(path)


def _go_definitions(root: Node) -> Iterator[tuple[str, Node]]:
    for node in root.children:
        names: list[str] = []
        if node.type in ("function_declaration", "method_declaration"):
            names = [_named(node)]
        elif node.type == "type_declaration":
            names = [_named(c) for c in node.children if c.type in ("type_spec", "type_alias")]
        for name in names:
            # only what another package can use
            if name[:1].isupper():
                yield name, node


def _go_module_keys(path: str) -> Iterator[str]:
    parts = PurePosixPath(path).parent.parts
    for i in range(1, len(parts)):
        yield "/".join(parts[i:])


def _go_resolve(module: str, importer: str) -> Iterator[str]:
    parts = module.strip("/").split("/")
    for i in range(len(parts)):
        yield "/".join(parts[i:])


GO_IMPORTS = ImportRules(
    read_imports=_go_imports,
    read_definitions=_go_definitions,
    module_keys=_go_module_keys,
    resolve=_go_resolve,
)
