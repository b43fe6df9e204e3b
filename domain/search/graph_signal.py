"""The graph signal: entities of the caller's graph named in a query bring the records that name them
(ranked first) and their neighbours' records (after), as a ranking fused with the other signals.

Names are found by the query's word n-grams (1-4 words, as written, lower, Title and UPPER case) among
the caller's entity names. A record is held to the search's filters and access rule (the same metadata
filter the vector index applies) before it can rank; hydration then checks it again like any hit."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from domain.artifacts.usecases import CHUNKS, WHOLE, vector_metadata
from domain.ids import artifact_of
from domain.history.usecases import COLLECTION as HISTORY, turn_metadata
from domain.memories.usecases import memory_metadata
from domain.model import LexicalMatch
from domain.ports import ArtifactStore, Filter, MetadataStore
from domain.ports.graph import DerivedGraph, GraphStore
from domain.search.where import matches

_WORD = re.compile(r"[\w'’-]+")
NEAR = 0.5  # a neighbour's record counts half a named entity's
MAX_NAMES = 20
MAX_NEAR = 50  # neighbours followed: the most connected to the names


def variants(query: str, longest: int = 4) -> list[str]:
    words = _WORD.findall(query)
    grams = {" ".join(words[i:i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}
    grams |= {g.removesuffix("'s").removesuffix("’s") for g in grams}
    return sorted({v for g in grams for v in (g, g.lower(), g.title(), g.upper()) if v})


@dataclass(frozen=True, slots=True)
class GraphSignal:
    graph: GraphStore
    derived: DerivedGraph
    store: MetadataStore
    artifacts: ArtifactStore
    fanout: int = 100  # records read per set of names (the most recent)

    def ranked(self, owner: str, query: str) -> dict[str, list[tuple[str, float]]]:
        """Per collection, (record id, score) best first; empty when the query names no entity."""
        named = [e.name for e in self.graph.entities(owner, variants(query))][:MAX_NAMES]
        if not named:
            return {}
        scores: dict[tuple[str, str, int], float] = {}
        for _, origin, part in self.derived.linked_records(owner, named, self.fanout):
            key = (origin[0], origin[1], part)
            scores[key] = scores.get(key, 0.0) + 1.0
        links: dict[str, int] = {}
        for r in self.graph.relations(owner, named):
            other = r.target if r.source in named else r.source
            links[other] = links.get(other, 0) + 1
        near = sorted((n for n in links if n not in named), key=lambda n: (-links[n], n))[:MAX_NEAR]
        if near:
            for _, origin, part in self.derived.linked_records(owner, near, self.fanout):
                key = (origin[0], origin[1], part)
                scores[key] = scores.get(key, 0.0) + NEAR
        found: dict[str, list[tuple[str, float]]] = {}
        for (kind, record, part), score in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
            for collection, record_id in self._records(kind, record, part):
                found.setdefault(collection, []).append((record_id, score))
        return found

    def _records(self, kind: str, record: str, part: int) -> list[tuple[str, str]]:
        if kind == "memory":
            return [("memory", record)]
        if kind == "turn":
            return [(HISTORY, record)]
        if part < 0:
            return [(WHOLE, record)]
        chunks = [c for c in self.artifacts.chunks_of(record) if c.index == part]
        return [(CHUNKS, chunks[0].id)] if chunks else []

    def matches(self, collection: str, ranked: list[tuple[str, float]], where: Filter | None,
                depth: int) -> list[LexicalMatch]:
        """The first ``depth`` of ``ranked`` that pass ``where`` (the search's filters and access rule)."""
        return passing(lambda ids: self._metadata(collection, ids), ranked, where, depth)

    def _metadata(self, collection: str, ids: list[str]) -> Mapping[str, dict[str, Any]]:
        if collection == "memory":
            return {i: memory_metadata(m) for i, m in self.store.get_memories(ids).items()}
        if collection == HISTORY:
            return {i: turn_metadata(t) for i, t in self.store.get_turns(ids).items()}
        owners = self.artifacts.get_artifacts(sorted({artifact_of(i) for i in ids}))
        return {i: vector_metadata(a) for i in ids if (a := owners.get(artifact_of(i))) is not None}


def passing(metadata: Callable[[list[str]], Mapping[str, dict[str, Any]]], ranked: list[tuple[str, float]],
            where: Filter | None, depth: int) -> list[LexicalMatch]:
    """The first ``depth`` of ``ranked`` whose records' index metadata pass ``where``, reading records
    a batch at a time until that many pass (records of no index: graph and symbol signals)."""
    kept: list[LexicalMatch] = []
    for start in range(0, len(ranked), depth):
        batch = ranked[start:start + depth]
        meta = metadata([i for i, _ in batch])
        kept += [LexicalMatch(i, score) for i, score in batch if i in meta and matches(meta[i], where)]
        if len(kept) >= depth:
            break
    return kept[:depth]
