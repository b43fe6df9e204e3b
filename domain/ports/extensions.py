"""Ports the plugins fill (chunkers, privacy policies) and those the toolsets add (scopes, exports)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from domain.model import (
    Artifact, Chunk, ChunkSpec, Hit, RequestContext,
)
from domain.ports.filters import Filter
from domain.ports.models import Tokenizer


@runtime_checkable
class Chunker(Protocol):
    """Splits a text into chunks whose offsets reproduce it exactly."""

    name: str
    version: str

    def chunk(self, text: str, spec: ChunkSpec, tokenizer: Tokenizer) -> list[Chunk]: ...


@runtime_checkable
class ChunkerCatalog(Protocol):
    """The chunkers the plugins registered; one that failed is reported once and skipped after."""

    def names(self) -> list[str]:
        """Usable chunkers, sorted."""
        ...

    def get(self, name: str) -> Chunker | None:
        """The chunker, or None when there is none of that name or it was found broken."""
        ...

    def report_broken(self, name: str, problem: str) -> None:
        """A chunker raised or returned invalid chunks: say so once, and stop offering it."""
        ...


@runtime_checkable
class PrivacyPolicy(Protocol):
    """Decides what a requester may see; called on every read path."""

    name: str

    def filter_hits(self, hits: Sequence[Hit], context: RequestContext) -> list[Hit]: ...


@runtime_checkable
class ArtifactScopes(Protocol):
    """Artifacts filed by scope (their labels) and what the toolsets over them report."""

    def list_artifacts(self, source_system: str, labels: Mapping[str, str], limit: int, newest_first: bool = True,
                       before: str | None = None) -> list[Artifact]:
        """Committed artifacts of ``source_system`` whose labels hold every pair of ``labels``, ordered by
        their ``iter_order`` label (absent: lowest), then time, then id; newest first unless told;
        at most ``limit``. ``before`` (ISO-8601): only those whose ``ts`` is earlier."""
        ...

    def record_access(self, artifact_id: str, ts: str) -> tuple[str, int] | None:
        """Count one read of a committed artifact: its (accessed_at, access_count) after it; None if unknown."""
        ...

    def accesses(self, ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        """(accessed_at, access_count) of those of ``ids`` read at least once."""
        ...

    def artifact_counts(self, source_system: str | None = None, rule: Filter | None = None) -> tuple[int, int]:
        """(committed artifacts, their chunks), of one source system or of all; with ``rule`` (an
        access rule: domain.access.rules.access_filter) only those it lets through."""
        ...

    def storage_bytes(self) -> int:
        """What the store takes on disk (its database files, or the database server's figure)."""
        ...

    def find_artifacts(self, where: Mapping[str, str], rule: Filter | None, limit: int,
                       before: tuple[float, str] | None = None) -> list[Artifact]:
        """Committed artifacts, newest first (time, then id, both descending), at most ``limit``.
        ``where`` may name ``source_system``, ``artifact_type``, ``owner`` (equal) and ``source_id_prefix``
        (the source id starts with it); ``rule`` (access_filter's shape) keeps only what it lets through;
        ``before`` (ts epoch, id): only those after that position in the order."""
        ...

    def tallies(self, rule: Filter | None) -> dict[str, Any]:
        """Counts of what ``rule`` lets through: ``memories`` by type, ``turns`` and ``conversations``,
        ``artifacts`` by type and by source system, ``chunks``; ``oldest`` and ``newest`` (ISO-8601
        times of any of them, None when empty)."""
        ...


@runtime_checkable
class DocumentExporter(Protocol):
    """Writes documents under one export directory, and nowhere else."""

    def write(self, relative_path: str, text: str) -> tuple[str, int]:
        """Write ``text`` (UTF-8) at ``relative_path`` inside the export directory, atomically; the
        absolute path written and its size in bytes. A path leading outside it (absolute, ``..``, a
        symbolic link anywhere on the way) raises ValidationError on ``output_path`` and writes nothing."""
        ...
