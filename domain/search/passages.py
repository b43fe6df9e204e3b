"""Passage search: the best chunks (or whole short artifacts) for a query inside a filter, each with
its cosine similarity to the query, for the toolsets that report one (spec 001, spec 002)."""

from __future__ import annotations

from dataclasses import dataclass

from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.model import Artifact, ArtifactChunk, Hit
from domain.ports import ArtifactStore, Embedder, Filter, VectorOutbox
from domain.search.retrieve import Retriever


@dataclass(frozen=True, slots=True)
class Passage:
    """A FINE result: a chunk of a memory, or a memory kept whole (``chunk`` None)."""

    artifact: Artifact
    chunk: ArtifactChunk | None
    text: str
    similarity: float


@dataclass(frozen=True, slots=True)
class PassageSearch:
    """Hybrid retrieval over artifacts and chunks inside ``where``; hits found by words alone carry
    no cosine from the ranking: it is computed from their stored vectors (no embedding)."""

    retrieve: Retriever
    store: ArtifactStore
    embedder: Embedder
    vectors: VectorOutbox  # the store's copy of every vector

    def __call__(self, query: str, where: Filter, limit: int, per_artifact: int | None = None) -> list[Passage]:
        hits = self.retrieve(query, {WHOLE: where, CHUNKS: where}, limit, per_artifact=per_artifact)
        artifacts = self.store.get_artifacts(sorted({str(h.fields["artifact_id"]) for h in hits}), indexing=True)
        chunks = self.store.get_chunks([h.id for h in hits if h.type == "chunk"], indexing=True)
        found: list[tuple[Hit, Passage]] = []
        for hit in hits:
            artifact = artifacts.get(str(hit.fields["artifact_id"]))
            chunk = chunks.get(hit.id)
            if artifact is None or (hit.type == "chunk" and chunk is None):
                continue  # deleted since it was ranked
            text = chunk.content if chunk is not None else (artifact.content or "")
            found.append((hit, Passage(artifact, chunk, text, float(hit.fields.get("similarity") or 0.0))))
        return self._with_similarity(query, found)

    def _with_similarity(self, query: str, found: list[tuple[Hit, Passage]]) -> list[Passage]:
        missing = [(i, p) for i, (h, p) in enumerate(found) if h.fields.get("similarity") is None]
        passages = [p for _, p in found]
        if not missing:
            return passages
        asked = self.embedder.embed_query(query)  # one short text: the passages' vectors are stored
        scores: dict[str, float] = {}
        for collection in (CHUNKS, WHOLE):
            ids = [key(p) for _, p in missing if (p.chunk is not None) == (collection == CHUNKS)]
            scores.update(self.vectors.similarities(collection, asked, ids) if ids else {})
        for i, p in missing:
            passages[i] = Passage(p.artifact, p.chunk, p.text, round(max(0.0, scores.get(key(p), 0.0)), 6))
        return passages


def key(passage: Passage) -> str:
    return passage.chunk.id if passage.chunk is not None else passage.artifact.id
