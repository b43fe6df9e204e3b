"""The knowledge graph in the SQL store (SQLite and PostgreSQL): entities, their observations and
relations, per owner; creation order is the id order. A mixin of the SQL store (its ``_write``,
``_read`` and ``_append``, as sqlalchemy_documents.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from sqlalchemy import (Column, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint, delete, func,
                        insert, or_, select, union)
from sqlalchemy.engine import Connection

from adapters.sql.base import metadata
from adapters.lexical.fts import Doc
from adapters.sql.graph_records import (drop_observation_vectors, entity_docs, index_entities, record_owners,
                                        unindex_entities)
from domain.graph.entities import entity_record
from domain.graph.model import Entity, Relation
from domain.model import AuditEntry, VectorRecord
from domain.ports.graph import GraphStore

graph_entities = Table(
    "graph_entities", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("owner", String(100), nullable=False),
    Column("name", String(1000), nullable=False),
    Column("entity_type", Text, nullable=False),
    UniqueConstraint("owner", "name", name="uq_graph_entity"),
)
graph_observations = Table(
    "graph_observations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("entity_id", Integer, ForeignKey("graph_entities.id", ondelete="CASCADE"), nullable=False),
    Column("content", Text, nullable=False),
    Index("ix_graph_observations_entity", "entity_id"),
)
graph_relations = Table(
    "graph_relations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("owner", String(100), nullable=False),
    Column("source", String(1000), nullable=False),
    Column("target", String(1000), nullable=False),
    Column("relation_type", String(1000), nullable=False),
    UniqueConstraint("owner", "source", "target", "relation_type", name="uq_graph_relation"),
    Index("ix_graph_relations_target", "owner", "target", "source", "relation_type"),  # covering: no scan
)


class SqlGraph(GraphStore):
    def create_entities(self, owner: str, entities: Sequence[Entity], entry: AuditEntry,
                        vectors: Sequence[VectorRecord] = ()) -> list[Entity]:
        with self._write() as conn:  # type: ignore[attr-defined]
            held = set(conn.execute(select(graph_entities.c.name).where(
                graph_entities.c.owner == owner, graph_entities.c.name.in_({e.name for e in entities}))).scalars())
            self._keep_tool_write(conn, owner, "e", _ids(conn, owner, held))  # type: ignore[attr-defined]
            made = []
            for entity in entities:
                if entity.name in held:
                    continue
                held.add(entity.name)
                kept = Entity(entity.name, entity.entity_type, tuple(dict.fromkeys(entity.observations)))
                new_id = conn.execute(insert(graph_entities).values(owner=owner, name=kept.name,
                                                                    entity_type=kept.entity_type)).inserted_primary_key[0]
                if kept.observations:
                    conn.execute(insert(graph_observations), [{"entity_id": new_id, "content": o}
                                                              for o in kept.observations])
                made.append(kept)
            index_entities(conn, self._lexical, owner, made, vectors, time.time())  # type: ignore[attr-defined]
            self._append(conn, entry)  # type: ignore[attr-defined]
        return made

    def create_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> list[Relation]:
        r = graph_relations
        with self._write() as conn:  # type: ignore[attr-defined]
            held = {rel: conn.execute(select(r.c.id).where(
                r.c.owner == owner, r.c.source == rel.source, r.c.target == rel.target,
                r.c.relation_type == rel.relation_type)).scalar() for rel in dict.fromkeys(relations)}
            made = [rel for rel, found in held.items() if found is None]
            self._keep_tool_write(conn, owner, "r", [i for i in held.values() if i is not None])  # type: ignore[attr-defined]
            if made:
                conn.execute(insert(r), [{"owner": owner, "source": m.source, "target": m.target,
                                          "relation_type": m.relation_type} for m in made])
            self._append(conn, entry)  # type: ignore[attr-defined]
        return made

    def add_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]],
                         entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> list[tuple[str, list[str]]] | str:
        e, o = graph_entities, graph_observations
        with self._write() as conn:  # type: ignore[attr-defined]
            ids = dict(conn.execute(select(e.c.name, e.c.id).where(
                e.c.owner == owner, e.c.name.in_({name for name, _ in items}))).tuples().all())
            missing = next((name for name, _ in items if name not in ids), None)
            if missing is not None:
                return missing
            self._keep_tool_write(conn, owner, "e", list(ids.values()))  # type: ignore[attr-defined]
            added = []
            for name, contents in items:
                held = dict(conn.execute(select(o.c.content, o.c.id).where(o.c.entity_id == ids[name])).tuples().all())
                self._keep_tool_write(conn, owner, "o", [held[c] for c in contents if c in held])  # type: ignore[attr-defined]
                new = [c for c in dict.fromkeys(contents) if c not in held]
                if new:
                    conn.execute(insert(o), [{"entity_id": ids[name], "content": c} for c in new])
                added.append((name, new))
            index_entities(conn, self._lexical, owner, _read(conn, owner, list(ids)), vectors,  # type: ignore[attr-defined]
                           time.time())
            self._append(conn, entry)  # type: ignore[attr-defined]
        return added

    def delete_entities(self, owner: str, names: Sequence[str], entry: AuditEntry) -> None:
        e, r = graph_entities, graph_relations
        with self._write() as conn:  # type: ignore[attr-defined]
            o = graph_observations
            ids = _ids(conn, owner, names)
            drop = self._drop_evidence  # type: ignore[attr-defined]
            removed = 0
            for part in _parts(ids):
                drop(conn, "o", list(conn.execute(select(o.c.id).where(o.c.entity_id.in_(part))).scalars()))
                conn.execute(delete(o).where(o.c.entity_id.in_(part)))
                removed += conn.execute(delete(e).where(e.c.id.in_(part))).rowcount
            drop(conn, "e", ids)
            unindex_entities(conn, self._lexical, owner, names)  # type: ignore[attr-defined]
            touching = or_(r.c.source.in_(list(names)), r.c.target.in_(list(names)))
            drop(conn, "r", list(conn.execute(select(r.c.id).where(r.c.owner == owner, touching)).scalars()))
            removed += conn.execute(delete(r).where(r.c.owner == owner, touching)).rowcount
            if removed:  # deleting what is not there changes nothing, and logs nothing
                self._append(conn, entry)  # type: ignore[attr-defined]

    def delete_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry) -> None:
        e, o = graph_entities, graph_observations
        removed = 0
        with self._write() as conn:  # type: ignore[attr-defined]
            for name, contents in items:
                ids = select(e.c.id).where(e.c.owner == owner, e.c.name == name)
                chosen = (o.c.entity_id.in_(ids), o.c.content.in_(list(contents)))
                self._drop_evidence(conn, "o", list(conn.execute(select(o.c.id).where(*chosen)).scalars()))  # type: ignore[attr-defined]
                removed += conn.execute(delete(o).where(*chosen)).rowcount
            if removed:
                drop_observation_vectors(conn, owner, items)
                held = record_owners(conn, [entity_record(owner, name) for name, _ in items])
                index_entities(conn, self._lexical, owner, _read(conn, owner, [n for _, n in held.values()]), (),  # type: ignore[attr-defined]
                               time.time())
                self._append(conn, entry)  # type: ignore[attr-defined]

    def delete_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> None:
        r = graph_relations
        removed = 0
        with self._write() as conn:  # type: ignore[attr-defined]
            for rel in relations:
                chosen = (r.c.owner == owner, r.c.source == rel.source, r.c.target == rel.target,
                          r.c.relation_type == rel.relation_type)
                self._drop_evidence(conn, "r", list(conn.execute(select(r.c.id).where(*chosen)).scalars()))  # type: ignore[attr-defined]
                removed += conn.execute(delete(r).where(*chosen)).rowcount
            if removed:
                self._append(conn, entry)  # type: ignore[attr-defined]

    def entities(self, owner: str, names: Sequence[str] | None = None, after: int = 0,
                 limit: int | None = None) -> list[Entity]:
        with self._read() as conn:  # type: ignore[attr-defined]
            return _read(conn, owner, names, after, limit)

    def _lexical_rows(self, conn: Connection) -> Iterator[tuple[str, Doc]]:
        """The store's rebuild of the lexical index reads the entity records' words too."""
        yield from super()._lexical_rows(conn)  # type: ignore[misc]
        yield from entity_docs(conn, _read)

    def entity_records(self, record_ids: Sequence[str]) -> dict[str, tuple[str, Entity]]:
        found: dict[str, tuple[str, Entity]] = {}
        with self._read() as conn:  # type: ignore[attr-defined]
            held = record_owners(conn, record_ids)
            by_owner: dict[str, list[str]] = {}
            for owner, name in held.values():
                by_owner.setdefault(owner, []).append(name)
            for owner, names in by_owner.items():
                found |= {entity_record(owner, e.name): (owner, e) for e in _read(conn, owner, names)}
        return found

    def relations(self, owner: str, touching: Sequence[str] | None = None) -> list[Relation]:
        r = graph_relations
        columns = (r.c.id, r.c.source, r.c.target, r.c.relation_type)
        with self._read() as conn:  # type: ignore[attr-defined]
            if touching is None:
                rows = conn.execute(select(*columns).where(r.c.owner == owner).order_by(r.c.id)).tuples().all()
            else:
                # Two index lookups (by source, by target), not one OR that scans every relation of the owner.
                found = {row[0]: row for part in _parts(list(dict.fromkeys(touching))) for row in conn.execute(
                    union(select(*columns).where(r.c.owner == owner, r.c.source.in_(part)),
                          select(*columns).where(r.c.owner == owner, r.c.target.in_(part)))).tuples()}
                rows = [found[key] for key in sorted(found)]
        return [Relation(source, target, kind) for _, source, target, kind in rows]

    def match_entities(self, owner: str, text: str) -> list[str]:
        e, o = graph_entities, graph_observations
        needle = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        observed = select(o.c.entity_id).where(func.lower(o.c.content).like(needle, escape="\\"))
        query = (select(e.c.name).where(e.c.owner == owner, or_(
            func.lower(e.c.name).like(needle, escape="\\"), func.lower(e.c.entity_type).like(needle, escape="\\"),
            e.c.id.in_(observed))).order_by(e.c.id))
        with self._read() as conn:  # type: ignore[attr-defined]
            return list(conn.execute(query).scalars())


def _read(conn: Connection, owner: str, names: Sequence[str] | None = None, after: int = 0,
          limit: int | None = None) -> list[Entity]:
    """The owner's entities in creation order, with their observations (see GraphStore.entities)."""
    e, o = graph_entities, graph_observations
    base = select(e.c.id, e.c.name, e.c.entity_type).where(e.c.owner == owner).order_by(e.c.id)
    if names is None:
        query = base.offset(after) if after else base
        rows = conn.execute(query.limit(limit) if limit is not None else query).tuples().all()
    else:
        rows = sorted(row for part in _parts(list(dict.fromkeys(names)))
                      for row in conn.execute(base.where(e.c.name.in_(part))).tuples())
        rows = rows[after:None if limit is None else after + limit]
    seen: dict[int, list[str]] = {row[0]: [] for row in rows}
    for part in _parts(list(seen)):
        for entity_id, content in conn.execute(select(o.c.entity_id, o.c.content).where(
                o.c.entity_id.in_(part)).order_by(o.c.id)).tuples():
            seen[entity_id].append(content)
    return [Entity(name, kind, tuple(seen[entity_id])) for entity_id, name, kind in rows]


def _ids(conn: object, owner: str, names: object) -> list[int]:
    e = graph_entities
    return [i for part in _parts(sorted(set(names))) for i in conn.execute(  # type: ignore[attr-defined,arg-type]
        select(e.c.id).where(e.c.owner == owner, e.c.name.in_(part))).scalars()]


def _parts(values: list, size: int = 5000) -> list[list]:
    """``values`` in lists of at most ``size``: an IN of more parameters than SQLite (32,766) or
    PostgreSQL (65,535) take in one statement fails, and a walk three relations deep reaches that."""
    return [values[i:i + size] for i in range(0, len(values), size)] or [[]]
