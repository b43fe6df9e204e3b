"""In-memory fake of the ArtifactStore port (with the metadata store), for unit tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.memory.basics import InMemoryMetadataStore
from adapters.lexical.context import turn_contexts
from domain.access.privacy import audience
from adapters.memory.lexical import bm25, bm25_with_context, filtered, holders, substrings
from domain.errors import StorageError
from dataclasses import replace

from domain.ids import record_of
from domain.access.rules import access_metadata
from domain.memories.validity import END, ended, interval_metadata
from domain.model import (Artifact, ArtifactChunk, AuditEntry, IngestJob, LexicalMatch, VectorRecord,
                          label_fields)
from domain.ports import ArtifactStore, Filter, LexicalIndex
from domain.search.lexical import LexicalStats, shared_idf
from domain.validation import epoch


class InMemoryArtifactStore(InMemoryMetadataStore, ArtifactStore):
    """Versions keyed by (artifact id, version) with a status, like the SQL tables."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[tuple[str, str], tuple[str, Artifact, list[ArtifactChunk]]] = {}
        self.jobs: dict[str, IngestJob] = {}
        self.requests: dict[str, dict[str, Any]] = {}

    def begin_artifact(self, artifact: Artifact, chunks: Sequence[ArtifactChunk], entry: AuditEntry | None,
                       job: IngestJob, words_first: bool = False) -> None:
        self.versions[(artifact.id, artifact.version)] = ("pending", replace(artifact, indexing=words_first),
                                                          list(chunks))
        self.jobs[artifact.id] = job
        self.requests.pop(artifact.id, None)
        if entry is not None:
            self.audit.append(entry)

    def start_job(self, job: IngestJob, request: Any) -> None:
        self.jobs[job.artifact_id] = job
        self.requests[job.artifact_id] = dict(request)

    def job_request(self, artifact_id: str) -> dict[str, Any] | None:
        return self.requests.get(artifact_id) if artifact_id in self.jobs else None

    def add_pending_vectors(self, job: IngestJob, collection: str, records: Sequence[VectorRecord]) -> bool:
        held = self.jobs.get(job.artifact_id)
        if held is None or (held.version, held.status, held.lease_owner) != (job.version, "indexing", job.lease_owner):
            return False
        self.jobs[job.artifact_id] = replace(held, done=job.done, lease_until=job.lease_until)
        self._put(collection, job.artifact_id, records, pending=True)
        return True

    def pending_artifact(self, artifact_id: str, version: str) -> tuple[Artifact, list[ArtifactChunk]] | None:
        found = self.versions.get((artifact_id, version))
        return (found[1], list(found[2])) if found is not None and found[0] == "pending" else None

    def embedded_records(self, artifact_id: str, version: str) -> set[str]:
        return {record_of(vid) for c in ("artifact", "chunk")
                for vid, (r, pending) in self.stored.get((c, artifact_id), {}).items()
                if pending and r.metadata.get("version") == version}

    def ingest_job(self, artifact_id: str) -> IngestJob | None:
        return self.jobs.get(artifact_id)

    def claim_job(self, artifact_id: str, version: str, worker: str, lease_until: float,
                  now: float) -> IngestJob | None:
        job = self.jobs.get(artifact_id)
        if job is None or job.version != version or job.status != "indexing":
            return None
        if not (job.lease_until < now or job.lease_owner == worker):
            return None
        self.jobs[artifact_id] = replace(job, lease_owner=worker, lease_until=lease_until)
        return self.jobs[artifact_id]

    def open_jobs(self) -> list[IngestJob]:
        return sorted((j for j in self.jobs.values() if j.status == "indexing"), key=lambda j: j.artifact_id)

    def fail_job(self, artifact_id: str, version: str, error: str) -> None:
        self.discard_pending(artifact_id, version)
        self.jobs[artifact_id] = IngestJob(artifact_id, version, "failed", 0, 0, error)

    def commit_artifact(self, artifact_id: str, version: str, entry: AuditEntry) -> str | None:
        found = self.versions.get((artifact_id, version))
        if found is None or found[0] != "pending":
            raise StorageError(f"Failed to store artifact: no pending version {version} of {artifact_id}")
        old = self.committed_versions().get(artifact_id)
        if old is not None and old != version:
            del self.versions[(artifact_id, old)]
            self._drop(("artifact", "chunk"), artifact_id, old)
        self.versions[(artifact_id, version)] = ("committed", replace(found[1], indexing=False), found[2])
        for c in ("artifact", "chunk"):
            for vid, (r, _) in list(self.stored.get((c, artifact_id), {}).items()):
                self.stored[(c, artifact_id)][vid] = (r, False)
        if self.jobs.get(artifact_id) is not None and self.jobs[artifact_id].version == version:
            del self.jobs[artifact_id]
        self._queue(("artifact", "chunk"), artifact_id, fresh=old is None)
        self.audit.append(entry)
        return old

    def discard_pending(self, artifact_id: str, version: str) -> None:
        if self.versions.get((artifact_id, version), ("",))[0] == "pending":
            del self.versions[(artifact_id, version)]
            self._drop(("artifact", "chunk"), artifact_id, version)
        if self.jobs.get(artifact_id) is not None and self.jobs[artifact_id].version == version:
            del self.jobs[artifact_id]

    def pending_version(self, artifact_id: str) -> str | None:
        return next((v for (a, v), (s, _, _) in self.versions.items() if a == artifact_id and s == "pending"), None)

    def pending_versions(self) -> list[tuple[str, str]]:
        return [key for key, (status, _, _) in self.versions.items() if status == "pending"]

    def committed_versions(self) -> dict[str, str]:
        return {a: v for (a, v), (status, _, _) in self.versions.items() if status == "committed"}

    def shown_versions(self, indexing: bool) -> dict[str, str]:
        """The committed versions, and with ``indexing`` the pending ones written words_first."""
        early = {a: v for (a, v), (status, art, _) in self.versions.items() if status == "pending" and art.indexing}
        return {**(early if indexing else {}), **self.committed_versions()}

    def get_artifact(self, artifact_id: str) -> Artifact | None:
        return self.get_artifacts([artifact_id]).get(artifact_id)

    def get_artifacts(self, ids: Sequence[str], indexing: bool = False) -> dict[str, Artifact]:
        current = self.shown_versions(indexing)
        return {i: self.versions[(i, current[i])][1] for i in ids if i in current}

    def chunks_of(self, artifact_id: str) -> list[ArtifactChunk]:
        return self.chunk_window(artifact_id, 0, 2**31 - 1)

    def get_chunks(self, chunk_ids: Sequence[str], indexing: bool = False) -> dict[str, ArtifactChunk]:
        wanted = set(chunk_ids)
        current = self.shown_versions(indexing)
        return {c.id: c for a, v in current.items() for c in self.versions[(a, v)][2] if c.id in wanted}

    def chunk_window(self, artifact_id: str, first: int, last: int, indexing: bool = False) -> list[ArtifactChunk]:
        version = self.shown_versions(indexing).get(artifact_id)
        if version is None:
            return []
        return [c for c in self.versions[(artifact_id, version)][2] if first <= c.index <= last]

    def expired_artifacts(self, now: float, limit: int) -> list[str]:
        found = [a for a in self.get_artifacts(sorted(self.committed_versions())).values() if a.expires_epoch <= now]
        return [a.id for a in sorted(found, key=lambda a: (a.expires_epoch, a.id))][:limit]

    def delete_artifact(self, artifact_id: str, entry: AuditEntry) -> int | None:
        version = self.committed_versions().get(artifact_id)
        job = self.jobs.pop(artifact_id, None)
        if version is None and job is None:
            return None
        count = len(self.versions[(artifact_id, version)][2]) if version is not None else 0
        for key in [k for k in self.versions if k[0] == artifact_id]:
            del self.versions[key]
        self._drop(("artifact", "chunk"), artifact_id)
        self._queue(("artifact", "chunk"), artifact_id)
        self.audit.append(entry)
        return count


class InMemoryLexicalStore(InMemoryArtifactStore, LexicalIndex):
    """The fake store searched by words: BM25 and substring matching over its current records."""

    def lexical_stats(self, collection: str, words: Sequence[str], tokens: Sequence[str] = ()) -> LexicalStats:
        docs = self._docs(collection, None)
        texts = [body.lower() for body, _ in docs.values()]
        return LexicalStats(len(docs), holders(docs, words),
                            {t: sum(1 for text in texts if t.lower() in text) for t in tokens})

    def lexical_search(self, collection: str, words: Sequence[str], limit: int,
                       where: Filter | None = None, context_weight: float = 0.35,
                       idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
        weights = self._idf(collection, words, (), idf)
        if collection != "history":
            return bm25(filtered(self._records(collection, where), where), words, limit, weights)
        return bm25_with_context(self._docs(collection, where), words, limit, context_weight, weights)

    def exact_search(self, collection: str, tokens: Sequence[str], limit: int,
                     where: Filter | None = None, idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
        weights = self._idf(collection, (), tokens, idf)
        return substrings(filtered(self._records(collection, where), where), tokens, limit, weights)

    def _idf(self, collection: str, words: Sequence[str], tokens: Sequence[str],
             idf: Mapping[str, float] | None) -> Mapping[str, float]:
        """The idf given, else each term's among the collection's current records (as the SQL stores count)."""
        if idf is not None:
            return idf
        stats = self.lexical_stats(collection, words, tokens)
        return {**shared_idf([stats], words), **shared_idf([stats], tokens, exact=True)}

    def _docs(self, collection: str, where: Filter | None) -> dict[str, tuple[str, str]]:
        """id -> (own text, context) of the records passing ``where`` (a turn's context: its neighbours')."""
        contexts: dict[str, str] = {}
        if collection == "history":
            for conversation in {t.conversation_id for t in self.turns.values()}:
                contexts.update(turn_contexts([(t.id, t.turn_index, t.content, audience(t))
                                               for t in self.turns.values() if t.conversation_id == conversation]))
        return {k: (text, contexts.get(k, "")) for k, text in filtered(self._records(collection, where), where).items()}

    def _records(self, collection: str, where: Filter | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        if collection == "memory":  # versions with an end only to a search that asks for a time (as SQL)
            return [(m.id, m.content, {"conversation_id": m.conversation_id, "ts_epoch": epoch(m.ts),
                                       "confidence": m.confidence, "type": m.type, **interval_metadata(m),
                                       **access_metadata(m)})
                    for m in self.memories.values() if END in (where or {}) or not ended(m)]
        if collection == "history":
            return [(t.id, t.content, {"conversation_id": t.conversation_id, "ts_epoch": epoch(t.ts),
                                       **access_metadata(t)}) for t in self.turns.values()]
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for artifact_id, version in self.shown_versions(indexing=True).items():
            _, artifact, parts = self.versions[(artifact_id, version)]
            fields = {"artifact_type": artifact.artifact_type, "source_system": artifact.source_system,
                      "ts_epoch": epoch(artifact.ts), **artifact.privacy(), **label_fields(artifact.labels),
                      **access_metadata(artifact)}
            if collection == "artifact" and not parts:
                rows.append((artifact.id, "\n".join(p for p in (artifact.title, artifact.content) if p), fields))
            elif collection == "chunk":
                rows += [(c.id, c.content, fields) for c in parts if c.metadata.get("indexed", True)]
        return rows
