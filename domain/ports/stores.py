"""Ports of the stores: rows, artifacts, the outbox, locks, the ledger and the audit log."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from domain.model import (
    Artifact, ArtifactChunk, AuditEntry, EmbeddingProfile, IngestJob, Memory, OutboxItem, Turn, Vector, VectorMatch,
    VectorRecord,
)
from domain.ports.filters import Filter


@runtime_checkable
class MetadataStore(Protocol):
    """The source of truth for content and metadata; every write carries its audit entry."""

    def stored_profile(self) -> EmbeddingProfile | None: ...

    def record_profile(self, profile: EmbeddingProfile, replace: bool = True) -> None:
        """Record the store's embedding profile; ``replace=False`` keeps one recorded already (a replica's)."""
        ...

    def add_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> None:
        """The row, its lexical entry, its vectors (queued for the index) and the audit entry, at once."""
        ...

    def replace_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> bool:
        """The stored memory of ``memory.id`` becomes ``memory`` (its words and vectors too), at once;
        False, with nothing written, when there is none."""
        ...

    def supersede_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> str | None:
        """``memory`` stored (as add_memory) and the one it names in ``supersedes`` ended at its
        ``valid_from`` (else its ``ts``) and marked superseded by it, in one transaction. None when done;
        else why nothing was written: "missing" (no such memory) or "superseded" (already)."""
        ...

    def get_memories(self, ids: Sequence[str]) -> dict[str, Memory]: ...

    def list_memories(self, type: str | None, limit: int, before: tuple[str, str] | None = None) -> list[Memory]:
        """Newest first (by ts, then id); ``before``: only those after (ts, id) in that order."""
        ...

    def delete_memory(self, memory_id: str, entry: AuditEntry) -> bool:
        """The row and its vectors (their removal from the index queued), at once."""
        ...

    def memory_ids(self) -> set[str]: ...

    def expired_items(self, collection: str, now: float, limit: int) -> list[str]:
        """Ids of memories (``memory``) or turns (``history``) whose ``expires_epoch`` is at or before
        ``now``, soonest expired first."""
        ...

    def put_turn(self, turn: Turn, entry: AuditEntry,
                 vectors: Mapping[str, Sequence[VectorRecord]] | None = None) -> None:
        """The turn (replacing the one at its position: its owner's conversation and index) with its
        vectors per collection, at once. A conversation id is its owner's own: two owners' conversations
        of one id are two conversations."""
        ...

    def delete_turn(self, turn_id: str, entry: AuditEntry) -> bool:
        """The turn, its lexical entries (its words in its neighbours' too) and its vectors, at once."""
        ...

    def replace_vectors(self, collection: str, owner: str, records: Sequence[VectorRecord]) -> None:
        """An existing record's vectors in one collection become ``records`` (queued for the index)."""
        ...

    def get_turn(self, owner: str, conversation_id: str, turn_index: int) -> Turn | None:
        """The turn at that place of ``owner``'s conversation (never another owner's of the same id)."""
        ...

    def get_turns(self, ids: Sequence[str]) -> dict[str, Turn]: ...

    def recent_turns(self, owner: str, conversation_id: str, limit: int, before: int | None = None) -> list[Turn]:
        """The last ``limit`` turns of ``owner``'s conversation (with turn_index below ``before``), oldest first."""
        ...

    def turns_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[Turn]:
        """Every conversation's turns by (conversation id, owner, turn index), those after ``after`` (such
        a triple), at most ``limit`` (an export's pages)."""
        ...

    def turn_hashes(self) -> dict[str, str]:
        """Every turn id with its content hash."""
        ...


@runtime_checkable
class ArtifactStore(Protocol):
    """Artifacts and their chunks; a new version is written pending and made visible by commit."""

    def begin_artifact(self, artifact: Artifact, chunks: Sequence[ArtifactChunk], entry: AuditEntry | None,
                       job: IngestJob, words_first: bool = False) -> None:
        """Write a version as pending, with its ingest job: invisible to every read until committed.

        ``entry`` None: nothing audited yet (the commit is the write a user sees). ``words_first``
        (a new artifact's first version): its words are searchable at once, before its vectors (reads
        with ``indexing`` see it, as an artifact with ``indexing`` set); dropping the pending version
        (a failed or discarded job) withdraws it.
        """
        ...

    def start_job(self, job: IngestJob, request: Mapping[str, Any]) -> None:
        """Record an ingest as under way before its version is written (its chunks are being cut).

        ``request`` (JSON values: the validated fields, the content, the chunker's name) is kept
        until the version is written, so the work survives a crash meanwhile.
        """
        ...

    def job_request(self, artifact_id: str) -> dict[str, Any] | None:
        """The request a job was started with, while its version is not yet written."""
        ...

    def add_pending_vectors(self, job: IngestJob, collection: str, records: Sequence[VectorRecord]) -> bool:
        """Store vectors of a pending version and the job's progress (``job.done``), renewing its lease.

        False (and nothing stored) when the job is no longer held by ``job.lease_owner``.
        """
        ...

    def pending_artifact(self, artifact_id: str, version: str) -> tuple[Artifact, list[ArtifactChunk]] | None:
        """A pending version as written by begin_artifact (content included when unchunked)."""
        ...

    def embedded_records(self, artifact_id: str, version: str) -> set[str]:
        """Records (chunks, or the artifact) of a pending version whose vectors are stored."""
        ...

    def ingest_job(self, artifact_id: str) -> IngestJob | None: ...

    def claim_job(self, artifact_id: str, version: str, worker: str, lease_until: float, now: float) -> IngestJob | None:
        """Take over a job whose lease ran out (or is ``worker``'s own); None when someone holds it."""
        ...

    def open_jobs(self) -> list[IngestJob]:
        """Every job still indexing, oldest first."""
        ...

    def fail_job(self, artifact_id: str, version: str, error: str) -> None:
        """Drop the pending version and its vectors; the job stays, marked failed with ``error``."""
        ...

    def commit_artifact(self, artifact_id: str, version: str, entry: AuditEntry) -> str | None:
        """Make the pending version the visible one and drop the older one, atomically.

        The version's vectors become current and are queued for the index; its job ends.
        Returns the replaced version, if any.
        """
        ...

    def discard_pending(self, artifact_id: str, version: str) -> None:
        """Drop a pending version, its vectors and its job."""
        ...

    def pending_version(self, artifact_id: str) -> str | None: ...

    def pending_versions(self) -> list[tuple[str, str]]: ...

    def committed_versions(self) -> dict[str, str]: ...

    def get_artifact(self, artifact_id: str) -> Artifact | None:
        """The committed version (with its content when it is not chunked)."""
        ...

    def get_artifacts(self, ids: Sequence[str], indexing: bool = False) -> dict[str, Artifact]:
        """Committed versions; with ``indexing``, also a new artifact's version written ``words_first``
        whose vectors are still being made (what a search's lexical signals can find)."""
        ...

    def chunks_of(self, artifact_id: str) -> list[ArtifactChunk]: ...

    def get_chunks(self, chunk_ids: Sequence[str], indexing: bool = False) -> dict[str, ArtifactChunk]:
        """Chunks of committed versions (with ``indexing``: as ``get_artifacts``)."""
        ...

    def chunk_window(self, artifact_id: str, first: int, last: int, indexing: bool = False) -> list[ArtifactChunk]:
        """Committed chunks with ``first <= index <= last``, in order (with ``indexing``: as ``get_artifacts``)."""
        ...

    def expired_artifacts(self, now: float, limit: int) -> list[str]:
        """Ids of committed artifacts whose expiry (``expires_epoch``) is at or before ``now``, oldest first."""
        ...

    def delete_artifact(self, artifact_id: str, entry: AuditEntry) -> int | None:
        """Delete every version; the number of chunks deleted, or None if there was no artifact."""
        ...


@runtime_checkable
class VectorOutbox(Protocol):
    """The store's vectors and the queue of work that brings the vector index up to date with them.

    Every write that changes a record's vectors stores them beside the row and queues the owner in
    the same transaction; the vector index is derived from what is stored here.
    """

    def last_queued(self) -> int:
        """The sequence number of the newest item ever queued (0: none)."""
        ...

    def oldest_queued(self) -> int | None:
        """The sequence number of the oldest item still queued (None: the queue is empty)."""
        ...

    def claim(self, limit: int) -> AbstractContextManager[list[OutboxItem]]:
        """Up to ``limit`` queued items nobody else holds, each with its owner's vectors read now.

        While the block runs no other worker syncs the same owners; the items leave the queue
        when it exits without an error.
        """
        ...

    def nearest_queued(self, collection: str, vector: Vector, limit: int,
                       where: Filter | None = None) -> tuple[set[str], list[VectorMatch]]:
        """The owners queued for the index in ``collection`` and their stored vectors nearest ``vector``.

        A search reads this before it queries the index: what the index may not hold yet is scored
        here, and the index's (possibly stale) vectors of those owners are set aside.
        """
        ...

    def stored_vectors(self, collection: str, after: str, limit: int) -> list[VectorRecord]:
        """Committed vectors of a collection with ids past ``after``, in id order (to rebuild the index)."""
        ...

    def similarities(self, collection: str, vector: Vector, record_ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of ``vector`` to each record's stored vectors (its best piece), from the
        store's own copy: what a search reports for a record it found by words alone."""
        ...

    def count_vectors(self, collection: str) -> int: ...

    def vectors_by_text(self, keys: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors (of any collection, pending or not) by the ``text_key`` they were written with."""
        ...

    def adopt_vectors(self, profile_key: str,
                      pages: Callable[[], Iterator[tuple[str, list[VectorRecord]]]]) -> int | None:
        """Make the stored vectors those of ``profile_key`` from ``pages`` (collection, records), once.

        For a store whose vectors lived only in the index (older releases), or that switched
        profile after a re-embed. None when the store already holds that profile's vectors;
        ``pages`` is only read when it does not.
        """
        ...


@runtime_checkable
class KeyLocks(Protocol):
    """Per-key mutual exclusion for every thread and process that writes this store."""

    def hold(self, key: str) -> AbstractContextManager[None]: ...


@runtime_checkable
class ReembedLedger(Protocol):
    """Which records already have vectors of another embedding profile, and when it became complete."""

    def reembedded(self, profile_key: str) -> dict[str, str]:
        """Record key (``artifact:<id>``, ``memory:<id>``, ``turn:<id>``) -> version embedded."""
        ...

    def mark_reembedded(self, profile_key: str, entries: Sequence[tuple[str, str]]) -> None: ...

    def mark_complete(self, profile: EmbeddingProfile, audit_seq: int) -> None: ...

    def completed(self, profile_key: str) -> tuple[EmbeddingProfile, int] | None: ...

    def last_audit_seq(self) -> int: ...


@runtime_checkable
class AuditLog(Protocol):
    """Append-only trail of writes and deletes: ids and actions, never content."""

    def append(self, entry: AuditEntry) -> None: ...

    def recent(self, limit: int) -> list[AuditEntry]: ...
