"""Source files read with tree-sitter: a file's outline (symbols and imports) and one chunker per language.

- ``outline(language, text)``: definitions in source order with dotted qualified names (code_tree_rules),
  and imports (code_tree_imports). Definitions inside function bodies are not listed.
- Chunkers ``code-javascript``, ``code-typescript``, ``code-tsx``, ``code-go``, ``code-rust``, ``code-java``,
  ``code-c``, ``code-cpp`` cut a file as the Python code chunker does (code.py): a piece starts at each
  top-level node, a definition taking the comments, attributes and decorators right above it; a class,
  impl, trait, interface or namespace longer than ``spec.target_tokens`` is cut at its members
  (``Class.method``, scope the class); ``#if`` blocks and ``extern "C" {}`` are cut inside the same way,
  keeping their scope. Pieces are packed by ``code.assemble``. A file tree-sitter reports errors in is
  cut by lines (``line_pieces``).

Cuts are at line starts only, so tree-sitter's UTF-8 byte offsets are never used as string offsets:
rows ("\\n"-separated, as tree-sitter counts them) are mapped to the string's row starts, and a chunk's
``start_line``/``end_line`` count the same rows as its symbols' lines. A grammar loads on first use (one
``Language`` per key, kept); a language whose wheel is missing has no chunker and no outline. The last
few trees are kept, so the outline and the chunks of one file cost one parse.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from domain.chunking import check_spec
from domain.code.model import Outline, Symbol, row_starts
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer
from plugins.chunkers.code import TokenStarts, assemble
from plugins.chunkers.code_lines import MODULE, Piece, line_pieces
from plugins.chunkers.code_tree_imports import QUERIES, imports
from plugins.chunkers.code_tree_rules import FUNCTION_VALUES, Found, definitions, end_row, members, signature
from plugins.hookspecs import hookimpl

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query, Tree

# language key -> (module of its official wheel, the function giving its grammar)
GRAMMARS = {
    "python": ("tree_sitter_python", "language"), "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"), "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"), "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"), "cpp": ("tree_sitter_cpp", "language"),
}
CHUNKED = ("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp")  # Python: code.py's ast chunker
ATTACHED = frozenset({"comment", "line_comment", "block_comment", "attribute_item", "decorator"})
_DECORATIONS = frozenset({"attribute_item", "decorator"})
# Statements the outline looks into for definitions (if blocks, #ifdef, extern "C", declarations...)
_DESCEND = re.compile(r"(?:statement|block|clause|declaration|declaration_list|specification|definition)$"
                      r"|^preproc_(?:if|ifdef|else|elif)$")
_TRANSPARENT = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "linkage_specification",
                          "namespace_definition"})
MAX_DEPTH = 64  # nesting the outline follows


def available(language: str) -> bool:
    """Whether the grammar's wheel (and tree-sitter) is installed, without importing it."""
    if language not in GRAMMARS:
        return False
    return all(importlib.util.find_spec(name) is not None for name in ("tree_sitter", GRAMMARS[language][0]))


@cache
def grammar(language: str) -> Language | None:
    """The language's grammar, loaded on first use; None when unknown or not installed."""
    if language not in GRAMMARS:
        return None
    module, function = GRAMMARS[language]
    try:
        from tree_sitter import Language

        return Language(getattr(importlib.import_module(module), function)())
    except (ImportError, AttributeError, ValueError):  # ValueError: a grammar this tree-sitter cannot load
        return None


@cache
def _import_query(language: str) -> Query:
    from tree_sitter import Query

    found = grammar(language)
    assert found is not None
    return Query(found, QUERIES[language])


@lru_cache(maxsize=4)  # outline and chunker read a file one after the other: it is parsed once
def parse(language: str, text: str) -> tuple[Tree, bytes] | None:
    """The text's tree and the UTF-8 bytes it was read from (a byte order mark left out); trees are only read."""
    found = grammar(language)
    if found is None:
        return None
    from tree_sitter import Parser

    source = text.removeprefix("\ufeff").encode("utf-8", "surrogatepass")
    return Parser(found).parse(source), source


# ---- outline ---------------------------------------------------------------------------------------

def outline(language: str, text: str) -> Outline | None:
    """The file's definitions (source order) and imports; None when the language has no grammar here."""
    parsed = parse(language, text)
    if parsed is None:
        return None
    tree, source = parsed
    from tree_sitter import QueryCursor

    statements = QueryCursor(_import_query(language)).captures(tree.root_node).get("import", [])
    found: list[tuple[Symbol, bool]] = []
    _walk(language, source, tree.root_node, "", "", found, 0)
    defined = {symbol.qualified_name for symbol, declared in found if not declared}
    symbols: list[Symbol] = []
    for symbol, declared in found:
        if declared and symbol.qualified_name in defined:
            continue  # a prototype or overload of a definition listed, or listed already
        defined.add(symbol.qualified_name)
        symbols.append(symbol)
    return Outline(language, tuple(symbols), tuple(imports(language, statements)), not tree.root_node.has_error)


def _walk(language: str, source: bytes, node: Node, scope: str, scope_kind: str,
          out: list[tuple[Symbol, bool]], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    for child in members(node):
        found = definitions(language, child, scope_kind)
        if not found:
            if child.type not in FUNCTION_VALUES and _DESCEND.search(child.type):
                _walk(language, source, child, scope, scope_kind, out, depth + 1)
            continue
        for item in found:
            qualified = f"{scope}.{item.name}" if scope else item.name
            if item.kind != "impl" and item.name:
                out.append((Symbol(item.kind, item.name.rsplit(".", 1)[-1], qualified,
                                   signature(source, item, language), _decorated_row(item.outer) + 1,
                                   end_row(item.node) + 1), item.declared))
            if item.body is not None:
                _walk(language, source, item.body, qualified, item.kind, out, depth + 1)


def _decorated_row(node: Node) -> int:
    """The first row of ``node`` with the attributes or decorators right above it (Rust, TypeScript members)."""
    row = node.start_point.row
    above = node.prev_named_sibling
    while above is not None and above.type in _DECORATIONS and end_row(above) >= row - 1:
        row, above = above.start_point.row, above.prev_named_sibling
    return row


# ---- chunks ----------------------------------------------------------------------------------------

class _Reading(NamedTuple):
    language: str
    rows: Sequence[int]  # char offset of each tree-sitter row
    tokens: TokenStarts
    target: int


def tree_pieces(reading: _Reading, children: Sequence[Node], start: int, end: int, owner: str, owner_kind: str,
                floor: int) -> list[Piece]:
    """The pieces of ``text[start:end]``, which holds ``children`` (a file's, or the scope ``owner``'s members).

    No piece starts at or above row ``floor``; a scope longer than the target is cut at its members.
    """
    rows, tokens = reading.rows, reading.tokens
    before, last = [], floor  # before[i]: the last row that children[:i] reach
    for child in children:
        before.append(last)
        last = max(last, end_row(child))
    cuts: list[tuple[int, Node]] = []
    for i, child in enumerate(children):
        if child.type in ATTACHED:
            continue
        j = i
        while (j > 0 and children[j - 1].type in ATTACHED and children[j - 1].start_point.row > floor
               and end_row(children[j - 1]) >= children[j].start_point.row - 1
               and not (j > 1 and children[j - 2].type not in ATTACHED
                        and end_row(children[j - 2]) == children[j - 1].start_point.row)):
            j -= 1  # a comment, attribute or decorator right above (not one trailing the line before)
        if children[j].start_point.row > before[j]:
            cuts.append((rows[children[j].start_point.row], child))
    pieces: list[Piece] = []
    if not cuts or cuts[0][0] > start:
        pieces.append(Piece(start, cuts[0][0] if cuts else end, owner_kind if owner else "preamble", owner or MODULE,
                            owner))
    seen_definition = False
    for k, (cut, child) in enumerate(cuts):
        stop = cuts[k + 1][0] if k + 1 < len(cuts) else end
        long = tokens.count(cut, stop) > reading.target
        found = definitions(reading.language, child, owner_kind)
        if not found:
            inside = _transparent(child)
            if long and inside:
                pieces += tree_pieces(reading, inside, cut, stop, owner, owner_kind, _header_row(child))
                continue
            kind = owner_kind if owner else ("statements" if seen_definition else "preamble")
            pieces.append(Piece(cut, stop, kind, owner or MODULE, owner))
            continue
        seen_definition = True
        item: Found = found[0]
        name = f"{owner}.{item.name}" if owner else item.name
        if long and item.body is not None and len(found) == 1 and (inside := members(item.body)):
            pieces += tree_pieces(reading, inside, cut, stop, name, item.kind, _header_row(item.body))
        else:
            pieces.append(Piece(cut, stop, item.kind, name, owner))
    return pieces


def _transparent(node: Node) -> list[Node]:
    """The members of a block that holds definitions at its own scope: ``#if``/``#ifdef``, ``extern "C" {}``,
    an anonymous namespace ([] for anything else)."""
    if node.type not in _TRANSPARENT or (node.type == "namespace_definition" and node.child_by_field_name("name")):
        return []
    body = node.child_by_field_name("body")
    return members(body) if body is not None else node.named_children


def _header_row(node: Node) -> int:
    """The row a block's members start after: its opening token's (``{``, ``#ifdef``), or (Python) its colon's."""
    body = node.child_by_field_name("body") or node
    first = body.children[0] if body.child_count else None
    if first is not None and not first.is_named:
        return first.start_point.row
    return body.prev_sibling.end_point.row if body.prev_sibling is not None else body.start_point.row - 1


class TreeChunker(Chunker):
    """Chunks one language's source read with tree-sitter (see the module's docstring)."""

    version = "1"

    def __init__(self, language: str) -> None:
        self.language = language
        self.name = f"code-{language}"

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        check_spec(spec)
        if not text:
            return []
        parsed = parse(self.language, text)
        rows = row_starts(text)
        tokens = TokenStarts(tokenizer.token_starts(text))
        pieces = None
        if parsed is not None and not parsed[0].root_node.has_error:
            reading = _Reading(self.language, rows, tokens, spec.target_tokens)
            try:
                pieces = tree_pieces(reading, parsed[0].root_node.named_children, 0, len(text), "", "", -1)
            except RecursionError:  # scopes nested past Python's stack: read by lines
                pieces = None
        if pieces is None:
            pieces = line_pieces(text)
        return assemble(text, pieces, self.language, tokens, spec, rows)


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    for language in CHUNKED:
        if available(language):
            register(TreeChunker(language))
