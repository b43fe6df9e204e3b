"""What a codebase's index knows of a file: its language, definitions and imports (the symbol table)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

# A file's language by its name's suffix (lower case). Python is read by the standard library's ast
# for chunks and by tree-sitter for symbols; the others by tree-sitter for both.
LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
}
# Languages a caller may name (``languages`` and ``language`` filters): "tsx" files count as typescript.
LANGUAGE_NAMES = ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp")
SYMBOL_KINDS = ("function", "method", "class", "interface", "struct", "enum", "trait", "type", "module",
                "constant", "variable")


def language_of(path: str) -> str | None:
    """The language a file's name says (None: not a source file we read)."""
    name = path.lower().rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return LANGUAGES.get(name[dot:]) if dot > 0 else None


def family(language: str) -> str:
    """The name a caller filters by: tsx is typescript."""
    return "typescript" if language == "tsx" else language


@dataclass(frozen=True, slots=True)
class Symbol:
    """A definition: ``kind`` (SYMBOL_KINDS), its ``name``, its ``qualified_name`` (``Class.method``,
    ``module::Type::fn``...), its first line as ``signature``, and 1-based inclusive lines."""

    kind: str
    name: str
    qualified_name: str
    signature: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Import:
    """What a file imports: the module (``os.path``, ``./util``, ``github.com/x/y``, ``std::io``), the
    names taken from it (may be empty), and its 1-based line."""

    module: str
    names: tuple[str, ...] = ()
    line: int = 0


@dataclass(frozen=True, slots=True)
class Outline:
    """A file's definitions (in source order) and imports."""

    language: str
    symbols: tuple[Symbol, ...] = ()
    imports: tuple[Import, ...] = ()
    parsed: bool = True  # False: the parser found errors (what it read is still given)


def row_starts(text: str) -> list[int]:
    """Where each "\\n"-separated row of ``text`` starts: the rows symbols' and code chunks' lines count
    (tree-sitter's rows)."""
    return list(accumulate((len(row) + 1 for row in text.split("\n")[:-1]), initial=0))


# ---- identifiers -------------------------------------------------------------------------------

_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->|/)[A-Za-z_$][\w$]*)*")


def words_of(identifier: str) -> list[str]:
    """``getUserById``, ``get_user_by_id``, ``GetUserByID``, ``get-user-by-id`` -> get user by id."""
    return [p.lower() for p in _PART.findall(identifier)]


def folded(identifier: str) -> str:
    """An identifier with case and separators gone: the key its spellings share."""
    return "".join(words_of(identifier))


def identifiers(query: str) -> list[str]:
    """The identifier-looking tokens of a query, dotted paths kept whole (``os.path.join``)."""
    return list(dict.fromkeys(m.group(0) for m in _IDENTIFIER.finditer(query)))


@dataclass(frozen=True, slots=True)
class CodeFile:
    """A file of an indexed codebase as the index has it."""

    codebase: str  # the codebase's id
    path: str  # relative to the codebase's root, with "/"
    language: str
    content_hash: str
    size: int
    artifact_id: str
    symbols: Sequence[Symbol] = field(default_factory=tuple)
    imports: Sequence[Import] = field(default_factory=tuple)
