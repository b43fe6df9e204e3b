"""One collection's ranked, current and permitted hits for one signal (vector, words, exact tokens)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from dataclasses import dataclass
from typing import Any

from domain.access.principal import LOCAL_USER
from domain.access.rules import access_fields, visible
from domain.memories.validity import holding, holds, validity
from domain.search.fusion import best_per_record
from domain.search.lexical import LexicalStats
from domain.ids import artifact_of, version_of
from domain.model import (
    Artifact, ArtifactChunk, EmbeddingProfile, Hit, LexicalMatch, Memory, RequestContext, Turn, Vector, VectorMatch,
)
from domain.ports import ArtifactStore, Filter, LexicalIndex, MetadataStore, PrivacyPolicy, VectorIndex, VectorOutbox
from domain.artifacts.usecases import WHOLE
from domain.graph.entities import ENTITIES, entity_hit
from domain.ports.graph import GraphStore
from domain.common import apply_policies
from domain.upkeep.vector_sync import owner_field

Record = tuple[str | None, Callable[[float], Hit]]  # a record's current version, and how to make its hit
# What one search has read of each collection's records (None: missing, or not the caller's to see), so
# that its signals and deeper rounds read each record once.
Records = dict[str, dict[str, Record | None]]


@dataclass(frozen=True, slots=True)
class Ranker:
    """Hits best first for a collection, and whether the index may hold more than was fetched."""

    vectors: VectorIndex
    store: MetadataStore
    artifacts: ArtifactStore
    lexical: LexicalIndex
    policies: Sequence[PrivacyPolicy]
    # Writes committed but not yet in the index are scored from the store (read-your-writes, no waiting).
    outbox: VectorOutbox | None = None
    now: Callable[[], float] = time.time
    graph: GraphStore | None = None  # the entities the graph tools wrote: records of their own (``entity``)

    def nearest(self, collection: str, vector: Vector, fetch: int, where: Filter, index: str | None = None,
                index_where: Filter | None = None, held_at: float | None = None) -> tuple[list[VectorMatch], bool]:
        """The nearest vectors of the collection (or of ``index``, other vectors of its records), and
        whether the index may hold more; ``index_where``: what the vector index itself is asked to
        filter (default ``where``). ``held_at``: the memories must hold then, and ``index_where`` does not
        say so (see ``_held``). Not yet checked against the rows: ``hydrate`` does that."""
        name = index or collection
        # The queue first, then the index: an item synced in between is then in one or the other.
        owners, queued = self.outbox.nearest_queued(name, vector, fetch, where or None) if self.outbox else (set(), [])
        asked = (where if index_where is None else index_where) or None
        raw = self.vectors.query(name, vector, fetch, asked) if held_at is None else self._held(
            name, vector, fetch, asked, held_at)
        if owners:
            field = owner_field(collection)
            fresh = [m for m in raw if (artifact_of(m.record_id) if field == "artifact_id" else m.record_id) not in owners]
            raw = sorted([*fresh, *queued], key=lambda m: -m.score)[:fetch]
        return raw, len(raw) >= fetch

    def _held(self, name: str, vector: Vector, fetch: int, asked: Filter | None, at: float) -> list[VectorMatch]:
        """The nearest ``fetch`` vectors of memories that hold at ``at``, from an index whose filters are costly:
        its plain answer when every memory in it holds then; else the memories that hold in an answer four
        times as deep, when ``fetch`` of them do (or the index has no more); else the index asked for them.
        Each is exactly the index's filtered answer: the vectors kept are all those that hold above the
        last one read. (A vector whose record is gone is kept: ``hydrate`` leaves it out.)"""
        raw: list[VectorMatch] = []
        for depth in (fetch, 4 * fetch):
            raw = self.vectors.query(name, vector, depth, asked)
            rows = self.store.get_memories(sorted({m.record_id for m in raw}))
            kept = [m for m in raw if m.record_id not in rows or holds(rows[m.record_id], at)]
            if len(kept) >= fetch or len(raw) < depth:
                return kept[:fetch]
        return self.vectors.query(name, vector, fetch, {**(asked or {}), **holding(at)})

    def stats(self, collection: str, words: Sequence[str], tokens: Sequence[str]) -> LexicalStats:
        """How many records the collection's word index holds, and how many hold each word and token."""
        return self.lexical.lexical_stats(collection, words, tokens)

    def worded(self, collection: str, words: Sequence[str], fetch: int, where: Filter,
               context_weight: float = 0.35, idf: Mapping[str, float] | None = None
               ) -> tuple[list[LexicalMatch], bool]:
        """By BM25 over the words, each weighing its ``idf`` (the lexical index holds only current records)."""
        raw = self.lexical.lexical_search(collection, words, fetch, where or None, context_weight, idf)
        return raw, len(raw) >= fetch

    def exact(self, collection: str, tokens: Sequence[str], fetch: int, where: Filter,
              idf: Mapping[str, float] | None = None) -> tuple[list[LexicalMatch], bool]:
        """By verbatim occurrences of code-like tokens, each weighing its ``idf``."""
        raw = self.lexical.exact_search(collection, tokens, fetch, where or None, idf)
        return raw, len(raw) >= fetch

    def hydrate(self, collection: str, found: Sequence[VectorMatch | LexicalMatch], context: RequestContext,
                read: Records | None = None) -> list[Hit]:
        """The hits of what an index found, best first: only current records the caller may see (a
        vector hit scored by its record's best current vector), held to the privacy policies."""
        if found and isinstance(found[0], VectorMatch):
            vectored = [m for m in found if isinstance(m, VectorMatch)]
            hits = [matched_by(h, self.vectors.profile) for h in self._hydrate(collection, vectored, context, read)]
        else:
            hits = self.hits(collection, [m for m in found if isinstance(m, LexicalMatch)], context, read)
        return apply_policies(self.policies, hits, context)

    def hits(self, collection: str, found: Sequence[LexicalMatch], context: RequestContext,
             read: Records | None = None) -> list[Hit]:
        """Hits for lexical matches, in their order; a record deleted meanwhile is left out."""
        records = self._records(collection, [m.record_id for m in found], context, read)
        return [records[m.record_id][1](m.score) for m in found if m.record_id in records]

    def _hydrate(self, collection: str, raw: list[VectorMatch], context: RequestContext,
                 read: Records | None = None) -> list[Hit]:
        """Drop vectors of versions that are not (or no longer) current, then keep each record's best.

        Stale vectors go first: during a replacement a chunk shared by both versions has the same id
        in each, and only the committed version's vector may speak for it.
        """
        records = self._records(collection, sorted({m.record_id for m in raw}), context, read)
        current = [m for m in raw if m.record_id in records and records[m.record_id][0] in (None, version_of(m.id))]
        return [records[m.record_id][1](m.score) for m in best_per_record(current)]

    def _records(self, collection: str, ids: Sequence[str], context: RequestContext,
                 read: Records | None = None) -> dict[str, Record]:
        """For each record that exists and the caller may see: its current version (None: not
        versioned) and how to make its hit. (The index filters already hold the caller to what it may
        see; this is the same rule on the rows themselves, so a stale index entry never shows.) With
        ``read``, what the search read before is not read again."""
        known = read.setdefault(collection, {}) if read is not None else {}
        missing = [i for i in dict.fromkeys(ids) if i not in known]
        if missing:
            found = self._read_records(collection, missing, context)
            known.update({i: found.get(i) for i in missing})
        return {i: record for i in ids if (record := known.get(i)) is not None}

    def _read_records(self, collection: str, ids: Sequence[str], context: RequestContext) -> dict[str, Record]:
        now = self.now()

        def seen(item: Memory | Turn | Artifact) -> bool:
            if visible(access_fields(item), context, now):
                return True
            context.tally.withheld.add(item.id)
            return False

        if collection == "memory":
            return {i: (None, partial(memory_hit, m)) for i, m in self.store.get_memories(ids).items()
                    if holds(m, context.as_of, now) and seen(m)}  # the indexes asked the same: a stale entry
        if collection == "history":
            return {i: (t.content_hash[:12], partial(turn_hit, t)) for i, t in self.store.get_turns(ids).items()
                    if seen(t)}
        if collection == ENTITIES:  # the caller's own graph alone
            found = self.graph.entity_records(ids) if self.graph is not None else {}
            return {i: (None, partial(entity_hit, i, e)) for i, (owner, e) in found.items() if owner == context.actor}
        # A new artifact still being embedded is found by its words: its hits say so (``indexing``).
        owners = {i: a for i, a in self.artifacts.get_artifacts(sorted({artifact_of(i) for i in ids}),
                                                                indexing=True).items() if seen(a)}
        if collection == WHOLE:
            return {i: (a.version, partial(artifact_hit, a)) for i, a in owners.items()}
        return {i: (owner.version, partial(chunk_hit, owner, c))
                for i, c in self.artifacts.get_chunks(ids, indexing=True).items()
                if (owner := owners.get(artifact_of(i))) is not None}


def matched_by(hit: Hit, profile: EmbeddingProfile) -> Hit:
    """A hit names the embedding profile of the vectors that found it (after a re-embed, the new one)."""
    provenance = hit.fields.get("provenance")
    meta = profile.as_metadata()
    if provenance is None or all(provenance.get(k) == v for k, v in meta.items()):
        return hit  # no provenance, or it names this profile already
    return Hit(hit.id, hit.type, hit.score, hit.content,
               {**hit.fields, "provenance": {**provenance, **meta}})


# Each hit carries its text once (``content``; the search use cases add the focused ``snippet``)
# and each piece of metadata once: what to cite lives in ``provenance``, nowhere else.

def provenance(artifact: Artifact) -> dict[str, Any]:
    return {"source_system": artifact.source_system, "source_id": artifact.source_id,
            "source_url": artifact.source_url, "title": artifact.title, "ts": artifact.ts, **written_by(artifact),
            **artifact.profile.as_metadata()}


def artifact_hit(artifact: Artifact, score: float) -> Hit:
    return Hit(artifact.id, "artifact", score, artifact.content or "", {
        "artifact_id": artifact.id, "artifact_type": artifact.artifact_type, "provenance": provenance(artifact),
        **artifact.privacy(), **indexing(artifact)})


def indexing(artifact: Artifact) -> dict[str, Any]:
    """A hit of a new artifact whose vectors are still being made says so: found by words alone."""
    return {"indexing": True} if artifact.indexing else {}


def chunk_hit(artifact: Artifact, chunk: ArtifactChunk, score: float) -> Hit:
    """A chunk with what its chunker knew of it (heading path, speaker, ...) under ``structure``, if anything
    (not the headings' levels: the sessions' header_path reads them; a result page has no tokens to spare)."""
    structure = {k: v for k, v in chunk.metadata.items() if k not in ("indexed", "heading_levels")}
    return Hit(chunk.id, "chunk", score, chunk.content, {
        "artifact_id": artifact.id, "artifact_type": artifact.artifact_type, "chunk_index": chunk.index,
        "provenance": provenance(artifact), **({"structure": structure} if structure else {}),
        **artifact.privacy(), **indexing(artifact)})


def memory_hit(memory: Memory, score: float) -> Hit:
    return Hit(memory.id, "memory", round(score, 6), memory.content, {
        "memory_type": memory.type, "confidence": memory.confidence, "conversation_id": memory.conversation_id,
        "token_count": memory.token_count, **flagged(memory), **validity(memory), "provenance": {"ts": memory.ts, **written_by(memory), **memory.profile.as_metadata()}})


def turn_hit(turn: Turn, score: float) -> Hit:
    return Hit(turn.id, "history", score, turn.content, {
        "conversation_id": turn.conversation_id, "role": turn.role, "turn_index": turn.turn_index,
        **flagged(turn), "provenance": {"ts": turn.ts, **written_by(turn), **turn.profile.as_metadata()}})


def written_by(item: Memory | Turn | Artifact) -> dict[str, str]:
    """Who wrote it, when that is not the local owner (a single-user store says nothing extra)."""
    return {} if item.owner == LOCAL_USER else {"owner": item.owner}


def flagged(item: Memory | Turn) -> dict[str, str]:
    """A memory's or turn's sensitivity, when above normal (policies read it; normal is the default)."""
    return {} if item.sensitivity == "normal" else {"sensitivity": item.sensitivity}
