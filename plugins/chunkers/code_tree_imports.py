"""What a file imports, read from its tree-sitter tree: one query per language finds the statements.

``module`` and ``names`` follow Python's ``from module import names``: ``from x import y, z`` is
("x", ("y", "z")); ``import a.b`` is ("a.b", ()); a relative ``from . import a`` is (".", ("a",)).
Elsewhere: JS/TS ``import {a, b as c} from "m"`` ("m", ("a", "b")), a default import by its local
name, ``* as ns`` "*", ``require("m")`` and re-exports ``export ... from "m"``; Go's import specs
(the path, no names); Rust ``use a::b::{C, D}`` ("a::b", ("C", "D")), ``use std::io`` ("std", ("io",)),
``extern crate x`` and ``mod x;`` ("x", ()); Java ``import a.b.C`` ("a.b", ("C",)), ``.*`` "*";
C/C++ ``#include`` (the header without <> or quotes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from domain.code.model import Import
from plugins.chunkers.code_tree_rules import text_of

if TYPE_CHECKING:
    from tree_sitter import Node

_SCRIPT = """
    (import_statement) @import
    (export_statement source: (_)) @import
    ((call_expression function: (identifier) @function arguments: (arguments . (string)))
      (#eq? @function "require")) @import
"""
QUERIES = {
    "python": "[(import_statement) (import_from_statement) (future_import_statement)] @import",
    "javascript": _SCRIPT, "typescript": _SCRIPT, "tsx": _SCRIPT,
    "go": "(import_spec) @import",
    "rust": "[(use_declaration) (extern_crate_declaration) (mod_item !body)] @import",
    "java": "(import_declaration) @import",
    "c": "(preproc_include) @import",
    "cpp": "(preproc_include) @import",
}


def _unquoted(node: Node | None) -> str:
    return text_of(node).strip().strip("\"'`<>")


def _python(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    named = [c.child_by_field_name("name") if c.type == "aliased_import" else c
             for c in node.children_by_field_name("name")]
    if node.type == "import_statement":
        yield from ((text_of(n), ()) for n in named if n is not None)
        return
    future = node.type == "future_import_statement"
    module = "__future__" if future else text_of(node.child_by_field_name("module_name"))
    wildcard = ("*",) if any(c.type == "wildcard_import" for c in node.named_children) else ()
    yield module, tuple(text_of(n) for n in named if n is not None) + wildcard


def _script(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    if node.type == "call_expression":  # require("m")
        arguments = node.child_by_field_name("arguments")
        yield _unquoted(arguments.named_children[0] if arguments is not None else None), ()
        return
    names: list[str] = []
    for part in node.named_children:
        if part.type == "import_require_clause":  # TypeScript's import x = require("m")
            yield _unquoted(part.child_by_field_name("source")), ()
            return
        for item in (part.named_children if part.type == "import_clause" else [part]):
            if item.type == "identifier" and part.type == "import_clause":
                names.append(text_of(item))  # the default import, by its local name
            elif item.type == "namespace_import" or (item.type == "namespace_export"):
                names.append("*")
            elif item.type in ("named_imports", "export_clause"):
                names += [text_of(s.child_by_field_name("name")) for s in item.named_children
                          if s.type in ("import_specifier", "export_specifier")]
    if node.type == "export_statement" and not names:
        names = ["*"]  # export * from "m"
    yield _unquoted(node.child_by_field_name("source")), tuple(names)


def _go(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    yield _unquoted(node.child_by_field_name("path")), ()


def _rust_use(node: Node, prefix: str, found: dict[str, list[str]]) -> None:
    """Fills ``found`` (module -> names, in order) with what the use tree ``node`` under ``prefix`` takes."""
    joined = (lambda tail: f"{prefix}::{tail}" if prefix and tail else prefix or tail)
    if node.type == "use_as_clause":
        _rust_use(node.child_by_field_name("path") or node, prefix, found)
    elif node.type == "scoped_use_list":
        inner = joined(text_of(node.child_by_field_name("path")))
        list_node = node.child_by_field_name("list")
        for item in list_node.named_children if list_node is not None else []:
            _rust_use(item, inner, found)
    elif node.type == "use_list":
        for item in node.named_children:
            _rust_use(item, prefix, found)
    elif node.type == "use_wildcard":
        path = next((c for c in node.named_children), None)
        found.setdefault(joined(text_of(path)), []).append("*")
    else:  # identifier, self, crate, super, scoped_identifier: the last part is the name taken
        module, _, name = joined(text_of(node)).rpartition("::")
        if module:
            found.setdefault(module, []).append(name)
        else:
            found.setdefault(name, [])


def _rust(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    if node.type != "use_declaration":  # extern crate x; mod x;
        yield text_of(node.child_by_field_name("name")), ()
        return
    found: dict[str, list[str]] = {}
    argument = node.child_by_field_name("argument")
    if argument is not None:
        _rust_use(argument, "", found)
    yield from ((module, tuple(names)) for module, names in found.items())


def _java(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    path = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
    if any(c.type == "asterisk" for c in node.named_children):
        yield text_of(path), ("*",)
        return
    module, _, name = text_of(path).rpartition(".")
    yield (module, (name,)) if module else (name, ())


def _include(node: Node) -> Iterator[tuple[str, tuple[str, ...]]]:
    yield _unquoted(node.child_by_field_name("path")), ()


READERS: dict[str, Callable[[Node], Iterator[tuple[str, tuple[str, ...]]]]] = {
    "python": _python, "javascript": _script, "typescript": _script, "tsx": _script, "go": _go,
    "rust": _rust, "java": _java, "c": _include, "cpp": _include,
}


def imports(language: str, statements: list[Node]) -> list[Import]:
    """The imports of the statements the language's query found (in any order), in source order."""
    read = READERS[language]
    found: list[Import] = []
    seen: set[tuple[int, int]] = set()
    for node in sorted(statements, key=lambda n: n.start_byte):
        if (node.start_byte, node.end_byte) in seen:
            continue
        seen.add((node.start_byte, node.end_byte))
        found += [Import(module, names, node.start_point.row + 1) for module, names in read(node) if module]
    return found
