"""Artifact ingestion as a durable job: pending rows, vectors stored batch by batch, one commit.

A version is written pending with its job; its vectors are stored beside it in batches (each
batch with the job's progress, under a lease); the commit makes it visible and queues its vectors
for the index. A crash leaves a job that the next start (or another replica, once the lease runs
out) resumes where it stopped: nothing partial is ever visible, nothing embedded is embedded twice.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from domain.chunk_checks import chunk_problem
from domain.chunker_choice import AUTO, FALLBACK, choose
from domain.chunking import content_hash
from domain.access.principal import LOCAL_USER, Identity
from domain.access.privacy import check_readable, kept_as_asked
from domain.artifacts.progress import Detached, Progress, Silent  # noqa: F401 - Detached: re-exported
from domain.access.rules import expiry, owned
from domain.errors import EmbeddingError, MemtroveError, NotFoundError, StorageError, ValidationError
from domain.ids import artifact_id, chunk_id
from domain.model import (Artifact, ArtifactChunk, Chunk, ChunkSpec, IngestJob, RequestContext, Vector,
                          VectorRecord, access_signature, artifact_version)
from domain.ports import ArtifactStore, Chunker, ChunkerCatalog, Embedder, KeyLocks, Tokenizer, VectorOutbox
from domain.artifacts.input import IngestRequest, validate
from domain.artifacts.reuse import known_vectors, same_text, text_key
from domain.artifacts.usecases import CHUNKS, WHOLE, Target, embedding_targets, vector_metadata
from domain.common import Clock, audit, piece_records, utc_now
from domain.pieces import Piece
from domain.validation import epoch, require_text

INDEXING, FAILED = "indexing", "failed"
EMBED_BATCH = 128  # pieces per embedder call and per stored batch: batches well, bounds memory
LEASE_SECONDS = 60.0  # a job not renewed for this long is taken over by the next worker

Checkpoint = Callable[[str], None]  # fault injection for the crash test; a no-op in service


def _no_checkpoint(_: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class IngestResult:
    artifact: Artifact | None  # None only while another worker still cuts it into chunks (``job`` says which)
    chunks: list[ArtifactChunk]
    status: str  # "ingested", "replaced", "unchanged" or "indexing" (going on elsewhere)
    job: IngestJob | None = None
    joined: bool = False  # indexing: the same content was under way before this call came (not its own work)

    def settled(self) -> Artifact:  # a result with no job under way has its artifact (one without names its job)
        if self.artifact is None:
            raise StorageError("The ingest returned neither the artifact nor its job")
        return self.artifact

    @property
    def stored_ids(self) -> list[str]:
        return [self.artifact.id, *(c.id for c in self.chunks)] if self.artifact is not None else []


@dataclass(frozen=True, slots=True)
class IngestArtifact:
    """Validate and cut the artifact, begin its version, then run its job to the commit."""

    embedder: Embedder
    store: ArtifactStore
    locks: KeyLocks
    chunkers: ChunkerCatalog
    tokenizer: Tokenizer
    spec: ChunkSpec
    split: Callable[[str], list[Piece]]
    clock: Clock = utc_now
    checkpoint: Checkpoint = _no_checkpoint
    embed_batch: int = EMBED_BATCH
    default_chunker: str = AUTO  # "auto" or a chunker's name (MEMTROVE_CHUNKER)
    lease_seconds: float = LEASE_SECONDS
    now: Callable[[], float] = time.time
    process: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)
    copies: VectorOutbox | None = None  # the store's copy of the vectors: a new version reuses the old one's

    def __call__(self, request: IngestRequest, progress: Progress | None = None) -> IngestResult:
        fields = validate(request)
        content: str = fields.pop("content")
        context = self.identity()
        fields |= owned(context, fields["visibility_scope"], request.visible_to)
        if request.shared_with is not None:
            fields |= {"owner": LOCAL_USER, "acl": tuple(sorted({f"u:{LOCAL_USER}", *request.shared_with}))}
        if request.retention_days is not None:
            fields["retention_days"] = request.retention_days
        now = self.now()
        check_readable(context, fields, epoch(fields["ts"]) if fields["ts"] else now, now, request.retention_days)
        chunker = self._chunker(request.chunker, fields, content)
        digest = content_hash(content)
        art_id = artifact_id(fields["source_system"], fields["source_id"], digest, fields["owner"])
        version = artifact_version(digest, chunker.name, chunker.version, fields["labels"], access_signature(
            fields["owner"], fields["acl"], fields["sensitivity"], fields["visibility_scope"],
            fields["retention_policy"]))
        worker = self.worker_id()
        with self.locks.hold(art_id):
            existing = self.store.get_artifact(art_id)
            # Same content and name, but other privacy or expiry asked (or the stored one expired): a
            # version naming all of them, not an "unchanged" that keeps what was not asked.
            asked = artifact_version(digest, chunker.name, chunker.version, fields["labels"], (
                fields["owner"], *fields["acl"], fields["sensitivity"], fields["visibility_scope"],
                fields["retention_policy"], request.retention_days, fields["ts"]))
            if existing is not None and existing.version in (version, asked):
                if kept_as_asked(existing, fields, request.retention_days, now):
                    return IngestResult(existing, self.store.chunks_of(art_id), "unchanged")
                version = asked if existing.version == version else version
            job = self.store.ingest_job(art_id)
            if job is not None and job.status == INDEXING:
                claimed = self.store.claim_job(art_id, job.version, worker, self._lease(), self.now())
                if claimed is None and job.version == version:
                    return self._under_way(job, joined=True)
                if claimed is None:
                    raise ValidationError("source_id", f"Artifact {art_id} (source_id {fields['source_id']!r}) is being "
                                                       "ingested concurrently with different content; retry when it is done")
                if job.version == version:  # its worker died: carry on where it stopped
                    begun = self.store.pending_artifact(art_id, version)
                    if begun is not None:
                        return self._run(*begun, claimed, existing is not None, progress or Silent())
                self.store.discard_pending(art_id, job.version)
            # Known as under way at once (artifact_get shows it), and durable, while its chunks are cut.
            self.store.start_job(IngestJob(art_id, version, INDEXING, 0, 0, lease_owner=worker,
                                           lease_until=self._lease()),
                                 {**fields, "participants": list(fields["participants"]), "acl": list(fields["acl"]),
                                  "content": content, "chunker": chunker.name})
            (progress or Silent())(art_id, 0, 0)
            artifact, chunks, job = self._begin(art_id, content, digest, fields, existing, chunker, worker)
        return self._run(artifact, chunks, job, existing is not None, progress or Silent())

    def resume(self, job: IngestJob, progress: Progress | None = None) -> IngestResult | None:
        """Finish a job this worker claimed (after a crash); None when there is nothing left to do."""
        existing = self.store.get_artifact(job.artifact_id)
        begun = self.store.pending_artifact(job.artifact_id, job.version)
        if begun is None:  # killed while its chunks were cut: start again from the request it kept
            request = self.store.job_request(job.artifact_id)
            if request is None:
                self.store.discard_pending(job.artifact_id, job.version)
                return None
            content = request.pop("content")
            chunker = self.chunkers.get(request.pop("chunker")) or self.chunkers.get(FALLBACK)
            if chunker is None:
                raise StorageError(f"No chunker available (not even {FALLBACK})")
            fields = {**request, "participants": tuple(request["participants"])}
            with self.locks.hold(job.artifact_id):
                artifact, chunks, job = self._begin(job.artifact_id, content, content_hash(content), fields,
                                                    existing, chunker, job.lease_owner or self.worker_id())
            begun = (artifact, chunks)
        return self._run(*begun, job, existing is not None, progress or Silent())

    def worker_id(self) -> str:
        """A lease owner for one run: this process, and which call of it."""
        return f"{self.process}:{uuid.uuid4().hex[:8]}"

    def _lease(self) -> float:
        return self.now() + self.lease_seconds

    def _under_way(self, job: IngestJob, joined: bool) -> IngestResult:
        begun = self.store.pending_artifact(job.artifact_id, job.version)
        if begun is None:
            done = self.store.get_artifact(job.artifact_id)
            if done is not None and done.version == job.version:  # committed meanwhile
                return IngestResult(done, self.store.chunks_of(job.artifact_id), "unchanged")
            return IngestResult(None, [], INDEXING, job, joined)  # its chunks are still being cut
        artifact, chunks = begun
        return IngestResult(replace(artifact, content=None), chunks, INDEXING, job, joined)

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

    def _begin(self, art_id: str, content: str, digest: str, fields: dict[str, Any], existing: Artifact | None,
               chunker: Chunker, worker: str) -> tuple[Artifact, list[ArtifactChunk], IngestJob]:
        now = self.clock()
        token_count = self.tokenizer.count(content)
        fields = {**fields, "acl": tuple(fields.get("acl", (f"u:{LOCAL_USER}",)))}
        keep_whole = fields.pop("keep_whole", False)
        ts = fields.pop("ts") or now
        fields["expires_epoch"] = expiry(fields["retention_policy"], epoch(ts), fields.pop("retention_days", None))  # stored as one record, however long (spec 001's unchunked types)
        pieces: list[Chunk] = []
        if token_count > self.spec.single_piece_max_tokens and not keep_whole:
            chunker, pieces = self._cut(chunker, content)
        chunks = [ArtifactChunk(chunk_id(art_id, c.index, c.content_hash), art_id, c.index, c.start_char, c.end_char,
                                c.content, c.token_count, c.content_hash, dict(c.metadata)) for c in pieces]
        artifact = Artifact(
            id=art_id, ts=ts, content_hash=digest, token_count=token_count,
            is_chunked=bool(chunks), num_chunks=len(chunks), ingested_at=now, chunker=chunker.name,
            chunker_version=chunker.version, profile=self.embedder.profile,
            content=None if chunks else content, **fields,
        )
        job = IngestJob(art_id, artifact.version, INDEXING, 0, len(embedding_targets(artifact, content, chunks)),
                        lease_owner=worker, lease_until=self._lease())
        # Audited at the commit, the write users see. A new artifact's words are searchable from now on.
        self.store.begin_artifact(artifact, chunks, None, job, words_first=existing is None)
        self.checkpoint("pending_written")
        return artifact, chunks, job

    def _run(self, artifact: Artifact, chunks: list[ArtifactChunk], job: IngestJob, replacing: bool,
             progress: Progress) -> IngestResult:
        """Embed what has no vectors yet, batch by batch, then commit."""
        content = artifact.content or ""
        targets = embedding_targets(artifact, content, chunks)
        stored = self.store.embedded_records(artifact.id, artifact.version) if job.done else set()
        todo = [t for t in targets if t[0] not in stored]
        done = len(targets) - len(todo)
        progress(artifact.id, done, len(targets))
        meta = vector_metadata(artifact)
        collection = CHUNKS if chunks else WHOLE
        known = known_vectors(self.store, self.copies, artifact, self.split) if replacing and self.copies else {}
        for number, batch in enumerate(self._batches(todo)):
            records = self._embed(artifact, batch, meta, len(targets) - done, progress, known)
            # Progress counts records (chunks), as its total does; a batch holds their pieces (a chunk the
            # model would truncate is several), so counting pieces ran past the total ("254 of 146").
            done += len({record_id for record_id, _, _ in batch})
            job = replace(job, done=done, lease_until=self._lease())
            if not self.store.add_pending_vectors(job, collection, records):
                if self.store.ingest_job(artifact.id) is None:
                    raise NotFoundError(f"Artifact {artifact.id} was deleted while it was being ingested")
                return self._under_way(job, joined=False)  # another worker took this job over and finishes it
            self.checkpoint(f"vectors_{number}")
            progress(artifact.id, done, len(targets))
        status = "replaced" if replacing else "ingested"
        self.store.commit_artifact(artifact.id, artifact.version, audit(
            status, "artifact", [artifact.id], self.clock(), self.identity(), version=artifact.version,
            chunks=len(chunks)))
        self.checkpoint("committed")
        return IngestResult(replace(artifact, content=None if chunks else content, indexing=False), chunks, status)

    def _batches(self, todo: list[Target]) -> Iterator[list[tuple[str, Piece, int]]]:
        """Whole records per batch (a record's pieces are stored together), ~embed_batch pieces each."""
        batch: list[tuple[str, Piece, int]] = []
        for record_id, text, index in todo:
            pieces = self.split(text)
            if batch and len(batch) + len(pieces) > self.embed_batch:
                yield batch
                batch = []
            batch += [(record_id, piece, index) for piece in pieces]
        if batch:
            yield batch

    def _embed(self, artifact: Artifact, batch: list[tuple[str, Piece, int]], meta: dict[str, Any],
               remaining: int, progress: Progress, known: dict[str, Vector]) -> list[VectorRecord]:
        """The batch's vectors: those stored for the same text (the last version's, or another document's of
        the same owner and model), the rest from the model."""
        keys = {p.content: text_key(artifact.profile.key, artifact.owner, p.content) for _, p, _ in batch}
        try:
            known = {**known, **same_text(self.copies, keys, known)}
            asked = [piece.content for _, piece, _ in batch if piece.content not in known]
            fresh = iter(self.embedder.embed_documents(asked) if asked else [])
            vectors = [known[p.content] if p.content in known else next(fresh) for _, p, _ in batch]
        except MemtroveError as exc:
            message = (f"Failed to ingest artifact: embedding generation failed for {remaining} "
                       f"{'chunk' if remaining == 1 else 'chunks'}. No data was written. Error: {exc.message}")
            if progress.detached:
                self.store.fail_job(artifact.id, artifact.version, message)
            else:
                self.store.discard_pending(artifact.id, artifact.version)
            raise EmbeddingError(message) from exc
        planned = [(record_id, piece, {**meta, "chunk_index": index}) for record_id, piece, index in batch]
        return [replace(r, text_key=keys[p.content])
                for r, (_, p, _) in zip(piece_records(planned, vectors, artifact.version), batch, strict=True)]

