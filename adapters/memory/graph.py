"""The knowledge graph as lists per owner: the in-memory fake of GraphStore (same contract suite)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from domain.graph.entities import ENTITIES, access, entity_record, entity_text, observation_key
from domain.graph.model import Entity, Relation
from domain.model import AuditEntry, VectorRecord
from domain.ports.graph import GraphStore


class InMemoryGraph(GraphStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(GraphStore, self).__init__(*args, **kwargs)  # the other bases' (see InMemoryTokens)
        self._graph_lock = threading.Lock()
        self.graph_entities: dict[str, list[Entity]] = {}
        self.graph_relations: dict[str, list[Relation]] = {}
        self.graph_audit: list[AuditEntry] = []
        self.entity_index: dict[str, tuple[str, str, float]] = {}  # record -> (owner, name, written at)

    def _log(self, entry: AuditEntry) -> None:
        log = getattr(self, "audit", None)  # the store's audit log, when this is mixed into the store
        (log if isinstance(log, list) else self.graph_audit).append(entry)

    def create_entities(self, owner: str, entities: Sequence[Entity], entry: AuditEntry,
                        vectors: Sequence[VectorRecord] = ()) -> list[Entity]:
        with self._graph_lock:
            held = self.graph_entities.setdefault(owner, [])
            names = {e.name for e in held}
            self._tool_wrote(owner, [("e", e.name) for e in entities if e.name in names])  # type: ignore[attr-defined]
            made = []
            for entity in entities:
                if entity.name not in names:
                    names.add(entity.name)
                    made.append(Entity(entity.name, entity.entity_type, tuple(dict.fromkeys(entity.observations))))
            held += made
            self._index(owner, made, vectors)
            self._log(entry)
            return made

    def create_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> list[Relation]:
        with self._graph_lock:
            held = self.graph_relations.setdefault(owner, [])
            made = [r for r in dict.fromkeys(relations) if r not in held]
            self._tool_wrote(owner, [("r", r) for r in relations if r in held])  # type: ignore[attr-defined]
            held += made
            self._log(entry)
            return made

    def add_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]],
                         entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> list[tuple[str, list[str]]] | str:
        with self._graph_lock:
            held = {e.name: i for i, e in enumerate(self.graph_entities.get(owner, []))}
            missing = next((name for name, _ in items if name not in held), None)
            if missing is not None:
                return missing
            entities = self.graph_entities[owner]
            added = []
            for name, contents in items:
                entity = entities[held[name]]
                self._tool_wrote(owner, [("e", name), *(("o", name, c) for c in contents)])  # type: ignore[attr-defined]
                new = [c for c in dict.fromkeys(contents) if c not in entity.observations]
                entities[held[name]] = Entity(entity.name, entity.entity_type, (*entity.observations, *new))
                added.append((name, new))
            self._index(owner, [entities[held[n]] for n in dict.fromkeys(n for n, _ in items)], vectors)
            self._log(entry)
            return added

    def delete_entities(self, owner: str, names: Sequence[str], entry: AuditEntry) -> None:
        gone = set(names)
        with self._graph_lock:
            entities, relations = self.graph_entities.get(owner, []), self.graph_relations.get(owner, [])
            self.graph_entities[owner] = [e for e in entities if e.name not in gone]
            self.graph_relations[owner] = [r for r in relations if r.source not in gone and r.target not in gone]
            self._tool_dropped(owner, lambda f: f[1] in gone if f[0] != "r"  # type: ignore[attr-defined]
                               else f[1].source in gone or f[1].target in gone)
            self._unindex(owner, list(gone))
            if len(self.graph_entities[owner]) + len(self.graph_relations[owner]) < len(entities) + len(relations):
                self._log(entry)  # deleting what is not there changes nothing, and logs nothing

    def delete_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry) -> None:
        removed = 0
        with self._graph_lock:
            entities = self.graph_entities.get(owner, [])
            for name, contents in items:
                for i, entity in enumerate(entities):
                    if entity.name == name:
                        kept = tuple(o for o in entity.observations if o not in set(contents))
                        removed += len(entity.observations) - len(kept)
                        entities[i] = Entity(entity.name, entity.entity_type, kept)
                self._tool_dropped(owner, lambda f: f[0] == "o" and f[1] == name  # type: ignore[attr-defined]
                                   and f[2] in set(contents))
            if removed:
                for name, contents in items:
                    record = entity_record(owner, name)
                    for text in contents:
                        self._drop([ENTITIES], record, observation_key(text))  # type: ignore[attr-defined]
                    self._queue([ENTITIES], record)  # type: ignore[attr-defined]
                self._index(owner, [e for e in entities if entity_record(owner, e.name) in self.entity_index
                                    and e.name in {n for n, _ in items}], ())
                self._log(entry)

    def delete_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> None:
        gone = set(relations)
        with self._graph_lock:
            held = self.graph_relations.get(owner, [])
            self.graph_relations[owner] = [r for r in held if r not in gone]
            self._tool_dropped(owner, lambda f: f[0] == "r" and f[1] in gone)  # type: ignore[attr-defined]
            if len(self.graph_relations[owner]) < len(held):
                self._log(entry)

    def entities(self, owner: str, names: Sequence[str] | None = None, after: int = 0,
                 limit: int | None = None) -> list[Entity]:
        with self._graph_lock:
            held = list(self.graph_entities.get(owner, []))
        if names is not None:
            wanted = set(names)
            held = [e for e in held if e.name in wanted]
        return held[after:None if limit is None else after + limit]

    def relations(self, owner: str, touching: Sequence[str] | None = None) -> list[Relation]:
        with self._graph_lock:
            held = list(self.graph_relations.get(owner, []))
        if touching is None:
            return held
        names = set(touching)
        return [r for r in held if r.source in names or r.target in names]

    def entity_records(self, record_ids: Sequence[str]) -> dict[str, tuple[str, Entity]]:
        with self._graph_lock:
            found = {r: self.entity_index[r] for r in record_ids if r in self.entity_index}
            entities = {(owner, e.name): e for owner, _, _ in found.values() for e in self.graph_entities.get(owner, [])}
        return {r: (owner, entities[(owner, name)]) for r, (owner, name, _) in found.items() if (owner, name) in entities}

    # Entities as records (domain/graph/entities.py): the fake lexical index reads them, vectors as the store's.
    def _index(self, owner: str, entities: Sequence[Entity], vectors: Sequence[VectorRecord]) -> None:
        for entity in entities:
            record = entity_record(owner, entity.name)
            held = self.entity_index.get(record)
            self.entity_index[record] = (owner, entity.name, held[2] if held else time.time())
            stored = self.stored.get((ENTITIES, record), {})  # type: ignore[attr-defined]
            self._put(ENTITIES, record, [v for v in vectors if v.record_id == record and v.id not in stored])  # type: ignore[attr-defined]
            self._queue([ENTITIES], record)  # type: ignore[attr-defined]

    def _unindex(self, owner: str, names: Sequence[str]) -> None:
        for name in names:
            record = entity_record(owner, name)
            if self.entity_index.pop(record, None) is not None:
                self._drop([ENTITIES], record)  # type: ignore[attr-defined]
                self._queue([ENTITIES], record)  # type: ignore[attr-defined]

    def _records(self, collection: str, *args: Any) -> list[tuple[str, str, dict[str, Any]]]:
        """The fake lexical index's records (adapters/memory/artifacts.py), entity records among them."""
        if collection != ENTITIES:
            return super()._records(collection, *args)  # type: ignore[misc]
        with self._graph_lock:
            held = list(self.entity_index.items())
            entities = {(o, e.name): e for o in {o for _, (o, _, _) in held} for e in self.graph_entities.get(o, [])}
        return [(record, entity_text(entities[(owner, name)]), access(owner, ts)) for record, (owner, name, ts) in held
                if (owner, name) in entities]

    def match_entities(self, owner: str, text: str) -> list[str]:
        needle = text.lower()
        return [e.name for e in self.entities(owner) if needle in e.name.lower() or needle in e.entity_type.lower()
                or any(needle in o.lower() for o in e.observations)]
