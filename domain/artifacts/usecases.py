"""Artifacts: retrieval by id (with the progress of an ingest under way), exact reconstruction, delete."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from domain.chunking import content_hash
from domain.access.principal import LOCAL_USER, Identity
from domain.access.rules import access_fields, access_metadata, visible
from domain.errors import NotFoundError, StorageError, ValidationError
from domain.ids import ARTIFACT_ID
from domain.chunk_checks import situating_text
from domain.model import Artifact, ArtifactChunk, IngestJob, Owned, RequestContext, label_fields
from domain.ports import ArtifactStore, KeyLocks
from domain.common import Clock, audit, check_change, denied, utc_now
from domain.validation import epoch, require_id

WHOLE, CHUNKS = "artifact", "chunk"  # vector collections: unchunked artifacts, and chunks


def embedded_text(chunk: ArtifactChunk) -> str:
    """What is embedded for a chunk: where it sits (heading path, subject...), then its text."""
    where = situating_text(chunk.metadata)
    return f"{where}\n{chunk.content}" if where else chunk.content


Target = tuple[str, str, int]  # (record id, text to embed, chunk index or -1)


def embedding_targets(artifact: Artifact, content: str, chunks: Sequence[ArtifactChunk]) -> list[Target]:
    """What gets vectors: the whole text when unchunked, else every indexed chunk where it sits."""
    if not chunks:
        return [(artifact.id, content, -1)]
    return [(c.id, embedded_text(c), c.index) for c in chunks if c.metadata.get("indexed", True)]


def vector_metadata(artifact: Artifact) -> dict[str, Any]:
    """What an artifact's vectors carry for filters inside the vector index (its labels included)."""
    return {"artifact_id": artifact.id, "artifact_type": artifact.artifact_type,
            "source_system": artifact.source_system, "sensitivity": artifact.sensitivity,
            "visibility_scope": artifact.visibility_scope, "ts_epoch": epoch(artifact.ts),
            **label_fields(artifact.labels), **access_metadata(artifact)}


def check_artifact_id(value: object) -> str:
    return require_id("artifact_id", value, "art_", ARTIFACT_ID, "32 hex characters")


@dataclass(frozen=True, slots=True)
class ArtifactView:
    artifact: Artifact | None  # None: only an ingest under way (or failed) is known
    content: str | None
    chunks: list[ArtifactChunk] | None
    job: IngestJob | None = None  # an ingest of a new version, under way or failed


@dataclass(frozen=True, slots=True)
class GetArtifact:
    """Metadata, and on request the exact original content and the chunk list; "not found" for an
    artifact the caller may not see (audited), as for one that does not exist."""

    store: ArtifactStore
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time
    clock: Clock = utc_now

    def __call__(self, artifact_id: object, include_content: bool = False, include_chunks: bool = False) -> ArtifactView:
        art_id = check_artifact_id(artifact_id)
        for name, flag in (("include_content", include_content), ("include_chunks", include_chunks)):
            if not isinstance(flag, bool):
                raise ValidationError(name, f"{name} must be true or false")
        # The job first: an ingest that commits between the two reads then shows as its artifact; read
        # the other way round, a commit in between would hide both (no artifact yet, no job any more).
        job = self.store.ingest_job(art_id)
        artifact, read = read_whole(self.store, art_id, include_content or include_chunks)
        context = self.identity()
        if artifact is not None and not visible(access_fields(artifact), context, self.now()):
            denied(self.store, context, "get", "artifact", art_id, "not visible to the caller", self.clock())
            raise NotFoundError(f"Artifact {art_id} not found")
        if artifact is None and job is not None and not self._may_see_job(art_id, context):
            raise NotFoundError(f"Artifact {art_id} not found")
        if job is not None and artifact is not None and job.version == artifact.version:
            job = None
        if artifact is None:
            if job is None:
                raise NotFoundError(f"Artifact {art_id} not found")
            return ArtifactView(None, None, None, job)
        chunks = read
        content = None
        if include_content:
            content = reconstruct(chunks) if artifact.is_chunked else artifact.content
            if content is None or content_hash(content) != artifact.content_hash:
                raise StorageError(f"Artifact {art_id} could not be reconstructed exactly (content hash differs)")
        return ArtifactView(artifact, content, chunks if include_chunks else None, job)

    def _may_see_job(self, art_id: str, context: RequestContext) -> bool:
        pending = job_access(self.store, art_id)
        return pending is not None and visible(access_fields(pending), context, self.now())


def job_access(store: ArtifactStore, art_id: str) -> Owned | Artifact | None:
    """Whose an ingest under way (with no version committed yet) is: the access its version has once
    begun, else the one the request it keeps will give (a job kept without either: the local owner's);
    None without a job."""
    job = store.ingest_job(art_id)
    if job is None:
        return None
    begun = store.pending_artifact(art_id, job.version)
    if begun is not None:
        return begun[0]
    request = store.job_request(art_id) or {}
    return Owned(owner=str(request.get("owner", LOCAL_USER)), acl=tuple(request.get("acl", [f"u:{LOCAL_USER}"])),
                 sensitivity=str(request.get("sensitivity") or "normal"))


def read_whole(store: ArtifactStore, artifact_id: str, with_chunks: bool = True
               ) -> tuple[Artifact | None, list[ArtifactChunk]]:
    """The committed artifact and its chunks as of one version: the row and the chunks are two reads,
    so a replacement committed between them (another worker, on a store with concurrent writers) is
    seen by reading the row again, and the pair is read again."""
    for _ in range(5):
        artifact = store.get_artifact(artifact_id)
        if artifact is None or not (artifact.is_chunked and with_chunks):
            return artifact, []  # the row alone: nothing else to be consistent with
        chunks = store.chunks_of(artifact_id)
        again = store.get_artifact(artifact_id)
        if again is None or again.version == artifact.version:
            return artifact, chunks
    raise StorageError(f"Artifact {artifact_id} kept changing while it was read; try again")


def reconstruct(chunks: Sequence[ArtifactChunk], from_first: bool = False) -> str:
    """The original text from chunk offsets: each chunk adds what lies past the previous one's end.

    From character 0 (a gap before the first chunk is an error), or with ``from_first`` the span
    the chunks cover (a section of the text)."""
    parts: list[str] = []
    ordered = sorted(chunks, key=lambda c: c.index)
    end = ordered[0].start_char if from_first and ordered else 0
    for chunk in ordered:
        if chunk.start_char > end:
            raise StorageError(f"Chunk {chunk.id} leaves a gap at character {end}")
        parts.append(chunk.content[end - chunk.start_char:])
        end = max(end, chunk.end_char)
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class DeleteArtifact:
    """Delete every version, its vectors and any ingest under way, in one transaction (the index follows)."""

    store: ArtifactStore
    locks: KeyLocks
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)
    now: Callable[[], float] = time.time

    def __call__(self, artifact_id: object) -> int:
        art_id = check_artifact_id(artifact_id)
        context = self.identity()
        with self.locks.hold(art_id):
            found = self.store.get_artifact(art_id) or job_access(self.store, art_id)  # an ingest is its caller's
            check_change(self.store, context, found, "delete", "artifact", art_id, "Artifact", "artifact_id",
                         self.clock(), self.now())
            entry = audit("delete", "artifact", [art_id], self.clock(), context)
            deleted = self.store.delete_artifact(art_id, entry)
            if deleted is None:
                raise NotFoundError(f"Artifact {art_id} not found")
        return deleted


