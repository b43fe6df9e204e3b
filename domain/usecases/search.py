"""Search over artifacts, chunks, memories and history: per-collection ranking, RRF fusion, provenance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.errors import ValidationError
from domain.fusion import best_per_record, reciprocal_rank_fusion
from domain.ids import artifact_of
from domain.model import Artifact, EmbeddingProfile, Hit, RequestContext, Vector, VectorMatch
from domain.ports import ArtifactStore, Embedder, Filter, MetadataStore, PrivacyPolicy, VectorIndex
from domain.usecases.artifacts import CHUNKS, WHOLE
from domain.usecases.common import apply_policies
from domain.usecases.filters import parse_filters
from domain.usecases.memories import memory_hit as plain_memory_hit
from domain.validation import require_int, require_text

BOUNDARY = "[CHUNK BOUNDARY]"
SNIPPET = 300
# What callers see a collection called (the spec's names); the vector index keys are shorter.
SHOWN = {WHOLE: "artifacts", CHUNKS: "artifact_chunks", "memory": "memory", "history": "history"}


def check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(name, f"{name} must be true or false")
    return value


@dataclass(frozen=True, slots=True)
class Ranker:
    """One collection's ranked, distinct, current and permitted hits for a query vector."""

    vectors: VectorIndex
    store: MetadataStore
    artifacts: ArtifactStore
    policies: Sequence[PrivacyPolicy]

    def rank(self, collection: str, vector: Vector, fetch: int, where: Filter, context: RequestContext
             ) -> tuple[list[Hit], bool]:
        """Hits best first, and whether the index may hold more than was fetched."""
        raw = self.vectors.query(collection, vector, fetch, where or None)
        hits = [matched_by(h, self.vectors.profile) for h in self._hydrate(collection, raw)]
        return apply_policies(self.policies, hits, context), len(raw) >= fetch

    def _hydrate(self, collection: str, raw: list[VectorMatch]) -> list[Hit]:
        """Drop vectors of versions that are not (or no longer) current, then keep each record's best.

        Stale vectors go first: during a replacement a chunk shared by both versions has the same id
        in each, and only the committed version's vector may speak for it.
        """
        ids = sorted({m.record_id for m in raw})
        if collection == "memory":
            rows = self.store.get_memories(ids)
            return [memory_hit(rows[m.record_id], m.score) for m in best_per_record(raw) if m.record_id in rows]
        if collection == "history":
            turns = self.store.get_turns(ids)
            current = [m for m in raw if m.record_id in turns and turns[m.record_id].content_hash[:12] == _version(m)]
            return [turn_hit(turns[m.record_id], m.score) for m in best_per_record(current)]
        owners = self.artifacts.get_artifacts(sorted({artifact_of(i) for i in ids}))
        current = [m for m in raw if artifact_of(m.record_id) in owners
                   and owners[artifact_of(m.record_id)].version == _version(m)]
        if collection == WHOLE:
            return [artifact_hit(owners[m.record_id], m.score) for m in best_per_record(current)]
        chunks = self.artifacts.get_chunks(sorted({m.record_id for m in current}))
        return [chunk_hit(owners[artifact_of(m.record_id)], chunk.id, chunk.index, chunk.content, m.score)
                for m in best_per_record(current) if (chunk := chunks.get(m.record_id)) is not None]


def _version(match: VectorMatch) -> str:
    """The content version a vector was embedded from: ``<record>::<version>::<piece>``."""
    return match.id.rsplit("::", 2)[-2]


def matched_by(hit: Hit, profile: EmbeddingProfile) -> Hit:
    """A hit names the embedding profile of the vectors that found it (after a re-embed, the new one)."""
    fields = dict(hit.fields)
    if "provenance" in fields:
        fields["provenance"] = {**fields["provenance"], **profile.as_metadata()}
    if "embedding_provider" in fields:
        fields.update(profile.as_metadata())
    return Hit(hit.id, hit.type, hit.score, hit.content, fields)


def provenance(artifact: Artifact) -> dict[str, Any]:
    return {"source_system": artifact.source_system, "source_id": artifact.source_id,
            "source_url": artifact.source_url, "title": artifact.title, "ts": artifact.ts,
            **artifact.profile.as_metadata()}


def artifact_hit(artifact: Artifact, score: float) -> Hit:
    content = artifact.content or ""
    return Hit(artifact.id, "artifact", score, content, {
        "artifact_id": artifact.id, "artifact_type": artifact.artifact_type, "snippet": content[:SNIPPET],
        "provenance": provenance(artifact), **artifact.privacy()})


def chunk_hit(artifact: Artifact, chunk_id: str, index: int, content: str, score: float) -> Hit:
    return Hit(chunk_id, "chunk", score, content, {
        "artifact_id": artifact.id, "artifact_type": artifact.artifact_type, "chunk_index": index,
        "snippet": content[:SNIPPET], "provenance": provenance(artifact), **artifact.privacy()})


def memory_hit(memory: Any, score: float) -> Hit:
    found = plain_memory_hit(memory, score)
    return Hit(found.id, found.type, found.score, found.content, {
        **found.fields, "snippet": memory.content[:SNIPPET],
        "provenance": {"conversation_id": memory.conversation_id, "ts": memory.ts, **memory.profile.as_metadata()}})


def turn_hit(turn: Any, score: float) -> Hit:
    return Hit(turn.id, "history", score, turn.content, {
        "conversation_id": turn.conversation_id, "role": turn.role, "turn_index": turn.turn_index,
        "snippet": turn.content[:SNIPPET], "provenance": {"conversation_id": turn.conversation_id, "ts": turn.ts,
                                                           **turn.profile.as_metadata()}})


def best_per_artifact(hits: Sequence[Hit]) -> list[Hit]:
    """One hit per artifact (its best chunk, or the whole artifact), other hits as they are; order kept."""
    seen: set[str] = set()
    kept: list[Hit] = []
    for hit in hits:
        key = hit.fields.get("artifact_id") if hit.type in ("artifact", "chunk") else None
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        kept.append(hit)
    return kept


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 5
    filters: dict[str, Any] | None = None
    include_memory: bool = False
    include_history: bool = False
    expand_neighbors: bool = False
    context: RequestContext = field(default_factory=RequestContext)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    searched: list[str]


def _fetch_rounds(limit: int) -> list[int]:
    return [limit * 3, limit * 12, limit * 48, 10_000]


@dataclass(frozen=True, slots=True)
class HybridSearch:
    """RRF (k = 60) across collections; de-duplicated by artifact before cutting to ``limit``."""

    embedder: Embedder
    ranker: Ranker
    artifacts: ArtifactStore

    def __call__(self, request: SearchRequest) -> SearchOutcome:
        query = require_text("query", request.query, 500, label="Query")
        limit = require_int("limit", request.limit, 1, 50)
        filters = parse_filters(request.filters)
        collections = [WHOLE, CHUNKS]
        if check_flag("include_memory", request.include_memory):
            collections.append("memory")
        if check_flag("include_history", request.include_history):
            collections.append("history")
        expand = check_flag("expand_neighbors", request.expand_neighbors)
        vector = self.embedder.embed_query(query)
        wheres = {c: where for c in collections if (where := filters.where(c)) is not None}
        searched = list(wheres)
        for fetch in _fetch_rounds(limit):
            ranked: dict[str, list[Hit]] = {}
            more = False
            for collection, where in wheres.items():
                hits, full = self.ranker.rank(collection, vector, fetch, where, request.context)
                ranked[collection] = hits
                more = more or full
            fused = fuse(ranked)
            if len(fused) >= limit or not more:
                break
        top = fused[:limit]
        return SearchOutcome([expand_hit(self.artifacts, h) for h in top] if expand else top,
                             [SHOWN[c] for c in searched])


def fuse(ranked: dict[str, list[Hit]]) -> list[Hit]:
    """RRF over the collections' rankings, then one hit per artifact (chunks preferred, best first)."""
    by_id = {hit.id: hit for hits in ranked.values() for hit in hits}
    fused = reciprocal_rank_fusion({SHOWN[name]: [h.id for h in hits] for name, hits in ranked.items()})
    # Ties (each collection's first hit scores 1/61) fall to the better similarity, then the id.
    order = sorted(fused, key=lambda i: (-fused[i][0], -by_id[i].score, i))
    hits = [Hit(i, by_id[i].type, round(fused[i][0], 6), by_id[i].content,
                {**by_id[i].fields, "collections": fused[i][1], "similarity": round(by_id[i].score, 6)})
            for i in order]
    return best_per_artifact(hits)


def expand_hit(artifacts: ArtifactStore, hit: Hit) -> Hit:
    """A chunk with its neighbours (index ±1), joined by [CHUNK BOUNDARY] markers."""
    if hit.type != "chunk":
        return hit
    index = int(hit.fields["chunk_index"])
    window = artifacts.chunk_window(hit.fields["artifact_id"], index - 1, index + 1)
    parts: list[str] = []
    for chunk in window:
        if parts:
            parts.append(BOUNDARY)
        parts.append(hit.content if chunk.index == index else chunk.content)
    return Hit(hit.id, hit.type, hit.score, "\n".join(parts) if parts else hit.content,
               {**hit.fields, "expanded": True, "neighbors": [c.id for c in window if c.index != index]})


@dataclass(frozen=True, slots=True)
class ArtifactSearch:
    """Semantic search over whole artifacts and chunks, one result per artifact (best chunk wins)."""

    embedder: Embedder
    ranker: Ranker
    artifacts: ArtifactStore

    def __call__(self, query: object, limit: object = 5, expand_neighbors: object = False,
                 context: RequestContext | None = None, **filters: object) -> list[Hit]:
        text = require_text("query", query, 500, label="Query")
        count = require_int("limit", limit, 1, 50)
        parsed = parse_filters(None, **filters)
        expand = check_flag("expand_neighbors", expand_neighbors)
        vector = self.embedder.embed_query(text)
        for fetch in _fetch_rounds(count):
            hits: list[Hit] = []
            more = False
            for collection in (WHOLE, CHUNKS):
                got, full = self.ranker.rank(collection, vector, fetch, parsed.where(collection) or {},
                                             context or RequestContext())
                hits += got
                more = more or full
            distinct = best_per_artifact(sorted(hits, key=lambda h: -h.score))
            if len(distinct) >= count or not more:
                break
        top = [Hit(h.id, h.type, round(h.score, 6), h.content, h.fields) for h in distinct[:count]]
        return [expand_hit(self.artifacts, h) for h in top] if expand else top
