"""An entity the caller writes with the graph tools is a record of its own kind, ``entity``: found by
meaning and by words by the one retrieval engine (search_nodes, and hybrid_search with
include_memory), as a memory is.

Its text is its name and type, then its observations, one per line: the lexical index holds that
whole. Its vectors are pieces: one of its name and type, and one of each observation the tools gave
it ("Ada_Quill: Keeps bees on the roof"; a long one cut as a memory's text is), so an observation
found by meaning finds the entity however many others it has. A piece's id names the observation it
came from (``<record>::<key>::<n>``), so deleting an observation deletes its vectors. The store writes
an entity's record, words and vectors in the transaction that writes the entity, and deletes them
with it; its vectors reach the vector index through the outbox, as every record's do.

``EntityVectors`` is the graph store the tools (and an import) write through: it embeds what a write
gives before the store writes it, as a memory is embedded before its row is written. An entity a
build reads from records has no vectors: it is found through those records.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from domain.access.rules import NEVER, acl_fields
from domain.graph.model import Entity, Relation
from domain.ids import piece_id
from domain.model import AuditEntry, Hit, VectorRecord
from domain.pieces import Piece
from domain.ports import Embedder
from domain.ports.graph import GraphStore

ENTITIES = "entity"  # the collection: of the vector index, the lexical index and search hits


def entity_record(owner: str, name: str) -> str:
    """The record id of an owner's entity (names are unique per owner)."""
    return "ent_" + hashlib.sha256(f"{owner}\x1f{name}".encode()).hexdigest()[:32]


def observation_key(text: str) -> str:
    """The 12 hex characters that stand for one observation in its vectors' ids (their version)."""
    return hashlib.sha256(f"o\x1f{text}".encode()).hexdigest()[:12]


def name_key(entity_type: str) -> str:
    return hashlib.sha256(f"n\x1f{entity_type}".encode()).hexdigest()[:12]


def entity_text(entity: Entity) -> str:
    """What the lexical index holds of an entity, and what its hit shows."""
    return "\n".join([f"{entity.name} ({entity.entity_type})", *entity.observations])


def access(owner: str, ts_epoch: float) -> dict[str, Any]:
    """An entity record's access fields: its owner's alone, never expiring (a graph is its owner's)."""
    return {**acl_fields((f"u:{owner}",)), "sensitivity": "normal", "expires_epoch": NEVER, "ts_epoch": ts_epoch}


def entity_hit(record_id: str, entity: Entity, score: float) -> Hit:
    return Hit(record_id, ENTITIES, round(score, 6), entity_text(entity), {
        "name": entity.name, "entity_type": entity.entity_type, "observations": list(entity.observations),
        "provenance": {"title": entity.name}})


@dataclass(frozen=True, slots=True)
class EntityVectors(GraphStore):
    """The graph store, each write's entity names and observations embedded first (see the module)."""

    store: GraphStore
    embedder: Embedder
    split: Callable[[str], list[Piece]] = lambda text: [Piece(0, 0, len(text), text)]
    now: Callable[[], float] = time.time

    def create_entities(self, owner: str, entities: Sequence[Entity], entry: AuditEntry,
                        vectors: Sequence[VectorRecord] = ()) -> list[Entity]:
        seen = {e.name for e in self.store.entities(owner, [e.name for e in entities])} if entities else set()
        fresh = []  # the entities this call creates: not held yet, the first of a name given twice
        for entity in entities:
            if entity.name not in seen:
                seen.add(entity.name)
                fresh.append(entity)
        made = self._embed(owner, [(e.name, e.entity_type, list(dict.fromkeys(e.observations))) for e in fresh])
        return self.store.create_entities(owner, entities, entry, [*vectors, *made])

    def add_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry,
                         vectors: Sequence[VectorRecord] = ()) -> list[tuple[str, list[str]]] | str:
        names = list(dict.fromkeys(name for name, _ in items))
        known = {e.name: e for e in self.store.entities(owner, names)} if names else {}
        wanted: dict[str, list[str]] = {}
        for name, contents in items:
            entity = known.get(name)
            if entity is not None:
                wanted.setdefault(name, []).extend(c for c in contents if c not in entity.observations)
        made = self._embed(owner, [(n, known[n].entity_type, list(dict.fromkeys(c))) for n, c in wanted.items()])
        return self.store.add_observations(owner, items, entry, [*vectors, *made])

    def _embed(self, owner: str, entities: list[tuple[str, str, list[str]]]) -> list[VectorRecord]:
        """The vectors of these entities' names and of the observations given: one embedding call."""
        pieces: list[tuple[str, str, Piece]] = []  # (record, key, piece)
        for name, kind, observations in entities:
            record = entity_record(owner, name)
            pieces += [(record, name_key(kind), p) for p in self.split(f"{name} ({kind})")]
            for text in observations:
                pieces += [(record, observation_key(text), p) for p in self.split(f"{name}: {text}")]
        if not pieces:
            return []
        found = self.embedder.embed_documents([p.content for _, _, p in pieces])
        stamp = self.now()
        return [VectorRecord(piece_id(record, key, piece.index), record, vector,
                             {"record_id": record, "version": key, **access(owner, stamp)})
                for (record, key, piece), vector in zip(pieces, found, strict=True)]

    def create_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> list[Relation]:
        return self.store.create_relations(owner, relations, entry)

    def delete_entities(self, owner: str, names: Sequence[str], entry: AuditEntry) -> None:
        self.store.delete_entities(owner, names, entry)

    def delete_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry) -> None:
        self.store.delete_observations(owner, items, entry)

    def delete_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> None:
        self.store.delete_relations(owner, relations, entry)

    def entities(self, owner: str, names: Sequence[str] | None = None, after: int = 0,
                 limit: int | None = None) -> list[Entity]:
        return self.store.entities(owner, names, after, limit)

    def relations(self, owner: str, touching: Sequence[str] | None = None) -> list[Relation]:
        return self.store.relations(owner, touching)

    def match_entities(self, owner: str, text: str) -> list[str]:
        return self.store.match_entities(owner, text)

    def entity_records(self, record_ids: Sequence[str]) -> dict[str, tuple[str, Entity]]:
        return self.store.entity_records(record_ids)
