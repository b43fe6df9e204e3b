"""Artifacts: idempotent ingestion with crash-safe writes, retrieval by id, cascading delete."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from domain.chunking import content_hash
from domain.errors import EmbeddingError, MemtroveError, NotFoundError, StorageError, ValidationError
from domain.ids import ARTIFACT_ID, artifact_id, chunk_id
from domain.locking import KeyedLock
from domain.chunk_checks import chunk_problem, situating_text
from domain.chunker_choice import AUTO, FALLBACK, choose
from domain.model import Artifact, ArtifactChunk, Chunk, ChunkSpec, VectorRecord, artifact_version
from domain.ports import ArtifactStore, Chunker, ChunkerCatalog, Embedder, Tokenizer, VectorIndex
from domain.usecases.artifact_input import IngestRequest, validate
from domain.usecases.common import Clock, audit, piece_records, utc_now
from domain.validation import epoch, require_id, require_text

WHOLE, CHUNKS = "artifact", "chunk"  # vector collections: unchunked artifacts, and chunks
VECTOR_BATCH = 64
EMBED_BATCH = 128  # pieces per embedder call: large enough to batch well, small enough to bound memory
_ARTIFACT_LOCKS = KeyedLock()

Checkpoint = Callable[[str], None]  # fault injection for the crash test; a no-op in service


def _no_checkpoint(_: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class IngestResult:
    artifact: Artifact
    chunks: list[ArtifactChunk]
    status: str  # "ingested", "replaced" or "unchanged"

    @property
    def stored_ids(self) -> list[str]:
        return [self.artifact.id, *(c.id for c in self.chunks)]


@dataclass(frozen=True, slots=True)
class IngestArtifact:
    """Embed everything, write the version pending, index its vectors, then commit it.

    Until the commit no read sees the new version; after it no read sees the old one. A crash at
    any point leaves a pending version (rolled back at the next start) or a committed one whose
    leftovers (the old version's vectors) are swept at the next start.
    """

    embedder: Embedder
    vectors: VectorIndex
    store: ArtifactStore
    chunkers: ChunkerCatalog
    tokenizer: Tokenizer
    spec: ChunkSpec
    split: Callable[[str], list[Chunk]]
    clock: Clock = utc_now
    checkpoint: Checkpoint = _no_checkpoint
    embed_batch: int = EMBED_BATCH
    default_chunker: str = AUTO  # "auto" or a chunker's name (MEMTROVE_CHUNKER)

    def __call__(self, request: IngestRequest) -> IngestResult:
        fields = validate(request)
        content: str = fields.pop("content")
        chunker = self._chunker(request.chunker, fields, content)
        digest = content_hash(content)
        art_id = artifact_id(fields["source_system"], fields["source_id"], digest)
        version = artifact_version(digest, chunker.name, chunker.version)
        with _ARTIFACT_LOCKS.hold(art_id):
            existing = self.store.get_artifact(art_id)
            if existing is not None and existing.version == version:
                return IngestResult(existing, self.store.chunks_of(art_id), "unchanged")
            pending = self.store.pending_version(art_id)
            if pending is not None and pending != version:
                raise ValidationError("source_id", f"Artifact {art_id} (source_id {fields['source_id']!r}) is being "
                                                   "ingested concurrently with different content; retry when it is done")
            return self._write(art_id, content, digest, fields, existing, chunker)

    def _chunker(self, asked: object, fields: dict[str, Any], content: str) -> Chunker:
        """The caller's choice, else the configured one; "auto" picks by type and content."""
        available = self.chunkers.names()
        if asked is not None:
            name = require_text("chunker", asked, 64)
            if name != AUTO and name not in available:
                raise ValidationError("chunker", f"Invalid chunker: {name}. Must be one of: "
                                                 f"{', '.join([AUTO, *available])}")
        else:
            name = self.default_chunker
        if name == AUTO:
            name = choose(fields["artifact_type"], content, (fields["title"], fields["source_id"],
                                                             fields["source_url"]), set(available))
        chunker = self.chunkers.get(name) or self.chunkers.get(FALLBACK)
        if chunker is None:
            raise StorageError(f"No chunker available (not even {FALLBACK})")
        return chunker

    def _cut(self, chunker: Chunker, content: str) -> tuple[Chunker, list[Chunk]]:
        """The chunker's chunks, checked; a chunker that raises or cuts wrong is reported and replaced."""
        try:
            pieces = chunker.chunk(content, self.spec, self.tokenizer)
            problem = chunk_problem(content, pieces)
        except Exception as exc:  # a plugin's bug must not fail (or corrupt) the ingest
            pieces, problem = [], f"raised {type(exc).__name__}: {exc}"
        if problem is None:
            return chunker, pieces
        fallback = self.chunkers.get(FALLBACK)
        if fallback is None or fallback is chunker:
            raise StorageError(f"Chunker {chunker.name} failed: {problem}")
        self.chunkers.report_broken(chunker.name, problem)
        return fallback, fallback.chunk(content, self.spec, self.tokenizer)

    def _write(self, art_id: str, content: str, digest: str, fields: dict[str, Any],
               existing: Artifact | None, chunker: Chunker) -> IngestResult:
        now = self.clock()
        token_count = self.tokenizer.count(content)
        pieces: list[Chunk] = []
        if token_count > self.spec.single_piece_max_tokens:
            chunker, pieces = self._cut(chunker, content)
        chunks = [ArtifactChunk(chunk_id(art_id, c.index, c.content_hash), art_id, c.index, c.start_char, c.end_char,
                                c.content, c.token_count, c.content_hash, dict(c.metadata)) for c in pieces]
        artifact = Artifact(
            id=art_id, ts=fields.pop("ts") or now, content_hash=digest, token_count=token_count,
            is_chunked=bool(chunks), num_chunks=len(chunks), ingested_at=now, chunker=chunker.name,
            chunker_version=chunker.version, profile=self.embedder.profile,
            content=None if chunks else content, **fields,
        )
        records = self._embed(artifact, content, chunks)
        self.checkpoint("embedded")
        status = "replaced" if existing else "ingested"
        self.store.begin_artifact(artifact, chunks, audit("ingest_begin", "artifact", [art_id], now,
                                                          version=artifact.version, chunks=len(chunks)))
        self.checkpoint("pending_written")
        collection = CHUNKS if chunks else WHOLE
        try:
            for start in range(0, len(records), VECTOR_BATCH):
                self.vectors.upsert(collection, records[start:start + VECTOR_BATCH])
                self.checkpoint(f"vectors_{start // VECTOR_BATCH}")
            old = self.store.commit_artifact(art_id, artifact.version, audit(
                status, "artifact", [art_id], self.clock(), version=artifact.version, chunks=len(chunks)))
        except Exception:
            self._roll_back(art_id, artifact.version)
            raise
        self.checkpoint("committed")
        if old is not None and old != artifact.version:
            try:
                for name in (WHOLE, CHUNKS):
                    self.vectors.delete_where(name, {"artifact_id": art_id, "version": old})
            except StorageError:
                pass  # the old version's vectors are never returned and are swept at the next start
        self.checkpoint("old_vectors_deleted")
        return IngestResult(replace(artifact, content=None if chunks else content), chunks, status)

    def _embed(self, artifact: Artifact, content: str, chunks: list[ArtifactChunk]) -> list[VectorRecord]:
        """Phase one: every vector, in batches across chunks; nothing is written here."""
        meta = {"artifact_id": artifact.id, "artifact_type": artifact.artifact_type,
                "source_system": artifact.source_system, "sensitivity": artifact.sensitivity,
                "visibility_scope": artifact.visibility_scope, "ts_epoch": epoch(artifact.ts)}
        targets = [(artifact.id, content, -1)] if not chunks else [
            (c.id, embedded_text(c), c.index) for c in chunks if c.metadata.get("indexed", True)]
        planned = [(record_id, piece, {**meta, "chunk_index": index})
                   for record_id, text, index in targets for piece in self.split(text)]
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(planned), self.embed_batch):
                batch = planned[start:start + self.embed_batch]
                vectors += self.embedder.embed_documents([p.content for _, p, _ in batch])
        except MemtroveError as exc:
            failed = len({record_id for record_id, _, _ in planned[len(vectors):]})
            raise EmbeddingError(
                f"Failed to ingest artifact: embedding generation failed for {failed} "
                f"{'chunk' if failed == 1 else 'chunks'}. No data was written. Error: {exc.message}") from exc
        return piece_records(planned, vectors, artifact.version)

    def _roll_back(self, art_id: str, version: str) -> None:
        try:
            for name in (WHOLE, CHUNKS):
                self.vectors.delete_where(name, {"artifact_id": art_id, "version": version})
            self.store.discard_pending(art_id, version)
        except StorageError:
            pass  # left pending: the next start rolls it back




def embedded_text(chunk: ArtifactChunk) -> str:
    """What is embedded for a chunk: where it sits (heading path, subject...), then its text."""
    where = situating_text(chunk.metadata)
    return f"{where}\n{chunk.content}" if where else chunk.content


def check_artifact_id(value: object) -> str:
    return require_id("artifact_id", value, "art_", ARTIFACT_ID, "32 hex characters")


@dataclass(frozen=True, slots=True)
class ArtifactView:
    artifact: Artifact
    content: str | None
    chunks: list[ArtifactChunk] | None


@dataclass(frozen=True, slots=True)
class GetArtifact:
    """Metadata, and on request the exact original content and the chunk list."""

    store: ArtifactStore

    def __call__(self, artifact_id: object, include_content: bool = False, include_chunks: bool = False) -> ArtifactView:
        art_id = check_artifact_id(artifact_id)
        for name, flag in (("include_content", include_content), ("include_chunks", include_chunks)):
            if not isinstance(flag, bool):
                raise ValidationError(name, f"{name} must be true or false")
        artifact = self.store.get_artifact(art_id)
        if artifact is None:
            raise NotFoundError(f"Artifact {art_id} not found")
        chunks = self.store.chunks_of(art_id) if artifact.is_chunked and (include_content or include_chunks) else []
        content = None
        if include_content:
            content = reconstruct(chunks) if artifact.is_chunked else artifact.content
            if content is None or content_hash(content) != artifact.content_hash:
                raise StorageError(f"Artifact {art_id} could not be reconstructed exactly (content hash differs)")
        return ArtifactView(artifact, content, chunks if include_chunks else None)


def reconstruct(chunks: Sequence[ArtifactChunk]) -> str:
    """The original text from chunk offsets: each chunk adds what lies past the previous one's end."""
    parts: list[str] = []
    end = 0
    for chunk in sorted(chunks, key=lambda c: c.index):
        if chunk.start_char > end:
            raise StorageError(f"Chunk {chunk.id} leaves a gap at character {end}")
        parts.append(chunk.content[end - chunk.start_char:])
        end = max(end, chunk.end_char)
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class DeleteArtifact:
    """Delete the rows (the commit point), then the vectors of every version."""

    vectors: VectorIndex
    store: ArtifactStore
    clock: Clock = utc_now

    def __call__(self, artifact_id: object) -> int:
        art_id = check_artifact_id(artifact_id)
        with _ARTIFACT_LOCKS.hold(art_id):
            deleted = self.store.delete_artifact(art_id, audit("delete", "artifact", [art_id], self.clock()))
            if deleted is None:
                raise NotFoundError(f"Artifact {art_id} not found")
            try:
                for name in (WHOLE, CHUNKS):
                    self.vectors.delete_where(name, {"artifact_id": art_id})
            except StorageError:
                pass  # rows are gone, so these vectors are never returned; swept at the next start
        return deleted


