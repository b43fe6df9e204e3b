"""The code chunker: a source file cut at its top-level definitions, each chunk named by what it holds.

- Python is read with the standard library's ``ast``. A piece starts at each top-level statement;
  a function, async function or class takes its decorators and the comment lines directly above
  it (same indentation, no blank line between). Statements before the first definition are the
  ``preamble``, later ones ``statements``; both are named ``module-level``.
- A class longer than ``spec.target_tokens`` is cut the same way inside its body: methods are
  ``Class.method`` (kind ``method``), nested classes ``Class.Inner`` (cut again when too long), the
  class line, docstring and attributes ``Class`` (kind ``class``).
- Any other text (another language, or Python that does not parse as a whole) is cut at column-0
  lines that look like definitions (``function``, ``def``, ``fn``, ``func``, ``class``, ``struct``,
  ``impl``, ``interface``, ``const x =``, ``public ...``, ``int main(...)``, SQL ``CREATE``...) with
  the comments and attributes directly above them, and at column-0 lines after a blank line. The
  name comes from the definition line, the language from a few telling lines ("unknown" if none).
- Packing: consecutive pieces of the same scope (the module, or one cut class) share a chunk up to
  ``spec.target_tokens``, without overlap. A piece still longer than the target is cut with
  ``token_windows`` (which overlaps), each window keeping the piece's name and a 1-based ``part``.
- Metadata: ``language``; ``qualified_name`` and ``kind`` of the chunk's first piece; ``start_line`` and
  ``end_line`` (1-based, inclusive) of its content; and, when a chunk holds several names,
  ``qualified_names``: all of them in order, repeats collapsed.

Every cut is at a line start (``\\n``, ``\\r\\n`` or ``\\r``, as Python counts lines), so offsets never
depend on ast's UTF-8 columns. The text is tokenized once (beside ast, in a second thread, when it
is large) and sizes are bisected from the token starts; ast reads blocks of about 32k characters:
the cost is linear in the text's size.
"""

from __future__ import annotations

import ast
import gc
import re
import threading
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import accumulate
from typing import NamedTuple

from domain.chunking import check_spec, content_hash, token_windows
from domain.model import Chunk, ChunkSpec
from domain.ports import Chunker, Tokenizer
from plugins.chunkers.code_lines import MODULE, Piece, guess_language, line_pieces
from plugins.hookspecs import hookimpl

BLOCK_CHARS = 32_768  # ast reads the text in blocks of about this size
THREAD_CHARS = 500_000  # from this size the tokenizer runs beside ast
_BREAK = re.compile(r"\r\n?|\n")
_PY_BLOCK_START = re.compile(r"\n(?=@|def\b|async\b|class\b|import\b|from\b|[A-Za-z_]\w*[ \t]*=[^=])")
_PARSE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError)
SOURCE_NAME = "<memtrove code chunker>"  # the file name given to ast
# Its warnings about the text (invalid escapes) are not ours to report, and -W error must not fail a parse.
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(SOURCE_NAME))


class CodeChunker(Chunker):
    name = "code"
    version = "2"

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]:
        check_spec(spec)
        if not text:
            return []
        with ThreadPoolExecutor(1, "memtrove-code-tokens") as pool:
            # A large text is tokenized in a second thread while ast reads it in this one: tiktoken
            # lets go of the GIL, so on two cores the wall time is about that of the slower of the two.
            pending = pool.submit(tokenizer.token_starts, text) if len(text) >= THREAD_CHARS else None
            lines = line_starts(text)
            outline = python_outline(text, lines)
            pieces = line_pieces(text) if outline is None else []
            tokens = TokenStarts(pending.result() if pending else tokenizer.token_starts(text))
        if outline is None:
            return assemble(text, pieces, guess_language(text), tokens, spec, lines)
        pieces = python_pieces(text, lines, outline, 0, len(text), "", -1, tokens, spec.target_tokens)
        return assemble(text, pieces, "python", tokens, spec, lines)


class Node(NamedTuple):
    """A Python statement by 0-based lines: ``first`` includes decorators; ``line`` is its keyword's."""

    kind: str  # "function", "class" or "statement"
    name: str
    first: int
    line: int
    last: int
    body: tuple[Node, ...] = ()


class TokenStarts:
    """Where the text's tokens start: counts of any span by bisection, starts of any slice."""

    def __init__(self, starts: Sequence[int]) -> None:
        self.starts = starts

    def index(self, position: int) -> int:
        """How many tokens start before ``position``."""
        return bisect_left(self.starts, position)

    def starts_at(self, index: int, position: int) -> bool:
        return index < len(self.starts) and self.starts[index] == position

    def count(self, start: int, end: int) -> int:
        """Tokens starting in ``[start, end)``, plus the one ``start`` cuts into (so never 0)."""
        first = self.index(start)
        return self.index(end) - first + (0 if self.starts_at(first, start) else 1)

    def local(self, start: int, end: int) -> list[int]:
        """The token starts of ``text[start:end]``, relative to ``start`` and beginning with 0."""
        shifted = [s - start for s in self.starts[self.index(start):self.index(end)]]
        return shifted if shifted and shifted[0] == 0 else [0, *shifted]


def line_starts(text: str) -> list[int]:
    """Where each line begins; a break is ``\\n``, ``\\r\\n`` or a lone ``\\r``, as Python's tokenizer has it."""
    if text.count("\r") == text.count("\r\n"):  # no lone "\r": a line ends at each "\n" (fast path)
        starts = list(accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))
    else:
        starts = [0, *(m.end() for m in _BREAK.finditer(text))]
    return starts[:-1] if len(starts) > 1 and starts[-1] == len(text) else starts


def python_outline(text: str, lines: Sequence[int], block_chars: int = BLOCK_CHARS) -> list[Node] | None:
    """The top-level statements of ``text``, or None when it is not Python that ``ast`` parses.

    ``ast`` reads blocks of about ``block_chars`` cut before column-0 lines that usually start a
    statement; a block that fails (the cut fell inside a string or brackets) is retried with twice
    as much text, up to the end of the text.
    """
    bounds = [0]
    while (found := _PY_BLOCK_START.search(text, bounds[-1] + block_chars)) is not None:
        bounds.append(found.end())
    bounds.append(len(text))
    nodes: list[Node] = []
    i = 0
    while i < len(bounds) - 1:
        j = i + 1
        offset = bisect_right(lines, bounds[i]) - 1
        while (block := _parse(text[bounds[i]:bounds[j]], offset)) is None:
            if j == len(bounds) - 1:
                return None
            wanted = 2 * (bounds[j] - bounds[i])
            while j < len(bounds) - 1 and bounds[j] - bounds[i] < wanted:
                j += 1
        nodes += block
        i = j
    return nodes


def _parse(source: str, offset: int) -> list[Node] | None:
    """The statements of one block, their lines shifted by ``offset``; None if it does not parse."""
    with _COLLECTOR_PAUSE:
        try:
            tree = ast.parse(source.removeprefix("\ufeff") if offset == 0 else source, SOURCE_NAME)
        except _PARSE_ERRORS:  # MemoryError/RecursionError: the parser's guard against deep nesting
            return None
        return [_node(statement, offset) for statement in tree.body]


class CollectorPause:
    """The cyclic garbage collector off while ast builds a block's nodes (acyclic, freed by reference
    counting): its passes over them cost about a quarter of the parse. Nested and concurrent pauses
    share one; the collector comes back with the last, unless it was off before the first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._restore = False

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._restore = gc.isenabled()
                gc.disable()
            self._holders += 1

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._restore:
                gc.enable()


_COLLECTOR_PAUSE = CollectorPause()


def _node(statement: ast.stmt, offset: int) -> Node:
    line, last = statement.lineno - 1 + offset, (statement.end_lineno or statement.lineno) - 1 + offset
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        first = statement.decorator_list[0].lineno - 1 + offset if statement.decorator_list else line
        if isinstance(statement, ast.ClassDef):
            return Node("class", statement.name, first, line, last, tuple(_node(s, offset) for s in statement.body))
        return Node("function", statement.name, first, line, last)
    return Node("statement", "", line, line, last)


def python_pieces(text: str, lines: Sequence[int], nodes: Sequence[Node], start: int, end: int, owner: str,
                  floor: int, tokens: TokenStarts, target: int) -> list[Piece]:
    """The pieces of ``text[start:end]``, which holds ``nodes`` (a module, or the class ``owner``'s body).

    No piece starts at or above line ``floor``; a class longer than ``target`` is cut inside.
    """
    cuts: list[tuple[int, Node]] = []
    last = floor
    for node in nodes:
        if node.first > last:  # a statement sharing a line with the one before stays with it
            cuts.append((lines[_comment_top(text, lines, node.first, last)], node))
        last = max(last, node.last)
    pieces: list[Piece] = []
    if not cuts or cuts[0][0] > start:
        pieces.append(Piece(start, cuts[0][0] if cuts else end, "class" if owner else "preamble",
                            owner or MODULE, owner))
    seen_definition = False
    for k, (cut, node) in enumerate(cuts):
        stop = cuts[k + 1][0] if k + 1 < len(cuts) else end
        name = f"{owner}.{node.name}" if owner else node.name
        if node.kind == "statement":
            kind = "class" if owner else ("statements" if seen_definition else "preamble")
            pieces.append(Piece(cut, stop, kind, owner or MODULE, owner))
            continue
        seen_definition = True
        if node.kind == "class" and node.body and tokens.count(cut, stop) > target:
            pieces += python_pieces(text, lines, node.body, cut, stop, name, node.line, tokens, target)
        else:
            kind = "method" if owner and node.kind == "function" else node.kind
            pieces.append(Piece(cut, stop, kind, name, owner))
    return pieces


def _comment_top(text: str, lines: Sequence[int], line: int, floor: int) -> int:
    """The first of the comment lines right above ``line`` with its indentation (``line`` if none)."""
    indent = "#"
    if text[lines[line]] in " \t\f":
        row = text[lines[line]:lines[line + 1] if line + 1 < len(lines) else len(text)]
        indent = row[:len(row) - len(row.lstrip(" \t\f"))] + "#"
    while line - 1 > floor and text.startswith(indent, lines[line - 1]):
        line -= 1
    return line


# ---- any other text: cut by lines -------------------------------------------------------------------

def assemble(text: str, pieces: Sequence[Piece], language: str, tokens: TokenStarts, spec: ChunkSpec,
             lines: Sequence[int] | None = None) -> list[Chunk]:
    """Packs consecutive pieces of one scope up to the target; cuts a longer piece into token windows.

    ``pieces`` tile the text, so each boundary is bisected once and any run's size is a subtraction.
    ``lines``: where the text's lines start (``line_starts`` when not given), for each chunk's 1-based
    inclusive ``start_line`` and ``end_line``.
    """
    lines = line_starts(text) if lines is None else lines
    bounds = [piece.start for piece in pieces] + [len(text)]
    marks = [tokens.index(bound) for bound in bounds]
    partial = [0 if tokens.starts_at(mark, bound) else 1 for mark, bound in zip(marks, bounds)]
    chunks: list[Chunk] = []
    k = 0
    while k < len(pieces):
        start, m = bounds[k], k + 1
        if marks[m] - marks[k] + partial[k] > spec.target_tokens:
            windows = token_windows(text[start:bounds[m]], tokens.local(start, bounds[m]), spec)
            for part, window in enumerate(windows, 1):
                first, last = window.start_char + start, window.end_char + start
                chunks.append(replace(window, index=len(chunks), start_char=first, end_char=last,
                                      metadata={**_metadata(language, pieces[k:m], lines, first, last), "part": part}))
        else:
            while (m < len(pieces) and pieces[m].scope == pieces[k].scope
                   and marks[m + 1] - marks[k] + partial[k] <= spec.target_tokens):
                m += 1
            content = text[start:bounds[m]]
            chunks.append(Chunk(len(chunks), start, bounds[m], content, marks[m] - marks[k] + partial[k],
                                content_hash(content), _metadata(language, pieces[k:m], lines, start, bounds[m])))
        k = m
    return chunks


def _metadata(language: str, pieces: Sequence[Piece], lines: Sequence[int], start: int, end: int) -> dict[str, object]:
    names = [p.name for i, p in enumerate(pieces) if i == 0 or p.name != pieces[i - 1].name]
    metadata: dict[str, object] = {"language": language, "qualified_name": names[0], "kind": pieces[0].kind,
                                   "start_line": bisect_right(lines, start), "end_line": bisect_right(lines, end - 1)}
    if len(names) > 1:
        metadata["qualified_names"] = names
    return metadata


@hookimpl
def memtrove_register_chunkers(register: Callable[[Chunker], None]) -> None:
    register(CodeChunker())
