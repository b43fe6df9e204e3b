"""Ports of code indexing: the codebases, their files' symbol tables, and the source tree on disk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from domain.code.model import CodeFile, Outline
from domain.code.roots import Roots


@dataclass(frozen=True, slots=True)
class Codebase:
    """An indexed directory, its owner and audience, and its latest run (``status`` indexing, indexed
    or failed; a run whose ``heartbeat`` stopped, or whose ``holder`` process is gone, is shown
    interrupted)."""

    id: str
    root: str  # absolute, symlinks resolved
    owner: str
    acl: tuple[str, ...]
    project: str | None = None
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    status: str = "indexing"
    run: str = ""
    heartbeat: float = 0.0
    counts: Mapping[str, int] = field(default_factory=dict)  # files seen, indexed, unchanged, removed, skipped...
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why), the first ones
    error: str | None = None
    started_at: str = ""
    finished_at: str | None = None
    holder: str = ""  # the process running it (domain/ports/processes.py), "" when unknown
    sensitivity: str = "normal"  # the access rule's fields (domain.access.rules.visible reads them)
    expires_epoch: float = 9.0e15


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A definition whose name (or qualified name) a query names, with the record that holds it."""

    codebase: str
    path: str
    kind: str
    qualified_name: str
    start_line: int
    end_line: int
    record: str  # the chunk (or, for a file embedded whole, the artifact) holding the definition
    exact: bool  # the qualified name matched (not only the last part)


@runtime_checkable
class CodeStore(Protocol):
    """Codebases and their files' symbol tables; a file's row is written after its artifact, so a row
    at a content hash says the artifact of that content exists."""

    def begin_run(self, codebase: Codebase, stale_before: float, replacing: str | None = None) -> Codebase | None:
        """Store the codebase as indexing by ``codebase.run``; None when another run of it is live
        (indexing, with a heartbeat at or after ``stale_before``) and is not the run ``replacing`` (one
        whose process is known gone: taken over at once, only if it still holds the codebase)."""
        ...

    def update_run(self, codebase: Codebase) -> None:
        """The run's progress or end (written only while the run still holds the codebase)."""
        ...

    def get_codebase(self, codebase_id: str) -> Codebase | None: ...

    def list_codebases(self) -> list[Codebase]:
        """Every codebase (of every owner: the caller's view is the use case's to choose)."""
        ...

    def code_files(self, codebase_id: str) -> dict[str, CodeFile]:
        """The files indexed, by path (symbols and imports not read)."""
        ...

    def put_code_file(self, file: CodeFile, records: Sequence[str]) -> None:
        """Replace a file's row, symbols and imports in one transaction; ``records[i]`` holds ``file.symbols[i]``."""
        ...

    def drop_code_files(self, codebase_id: str, paths: Sequence[str]) -> None: ...

    def drop_codebase(self, codebase_id: str) -> None:
        """The codebase's row, files, symbols and imports."""
        ...

    def find_symbols(self, keys: Sequence[str], codebases: Sequence[str] | None, limit: int) -> list[SymbolHit]:
        """Definitions whose folded name or folded qualified name is one of ``keys`` (domain.code.model.folded),
        in these codebases (None: any), exact qualified matches first."""
        ...

    def file_symbols(self, codebase_id: str, path: str) -> CodeFile | None:
        """One file's row with its symbols and imports."""
        ...


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file of a tree to index: its path below the root, and its text or why it is skipped."""

    path: str
    size: int
    text: str | None = None
    skipped: str | None = None


@runtime_checkable
class SourceTree(Protocol):
    """Directories on the server's machine, read as git would (``.gitignore``), within allowed roots."""

    def resolve(self, path: object, roots: Roots) -> str:
        """The directory's absolute path with symlinks resolved; ValidationError naming ``path`` when it
        is not absolute or has ``..``, then (symlinks resolved first) when it lies outside every allowed
        root (domain/code/roots.py: one message, nothing told of the path), and only inside them when it
        does not exist or is not a directory."""
        ...

    def locate(self, path: object) -> str:
        """An absolute path with symlinks resolved as far as they exist: ValidationError naming ``path``
        when it is not absolute or has ``..``. For codebases that may be gone from the disk."""
        ...

    def files(self, root: str, include: Sequence[str], exclude: Sequence[str]) -> Iterator[str]:
        """Paths below ``root`` ("/"-separated) worth reading, in a stable order: hidden, ignored,
        vendored and generated folders left out."""
        ...

    def read(self, root: str, path: str) -> SourceFile: ...


class OutlineReader(Protocol):
    def __call__(self, language: str, text: str) -> Outline | None: ...
