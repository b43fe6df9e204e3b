"""Entities as searchable records in the SQL store (domain/graph/entities.py): a row per record (its
owner, name and access fields, which the lexical index joins to filter), its words in the lexical
index (collection ``entity``), its vectors in the vectors table, queued for the vector index. Written
and deleted in the transaction of the graph write that changes the entity."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Column, Float, Index, String, Table, Text, delete, insert, select
from sqlalchemy.engine import Connection

from adapters.lexical.fts import Doc
from adapters.sql.base import metadata
from adapters.sql.vectors import put_vectors, queue, vectors
from domain.graph.entities import (
    ENTITIES,
    access,
    entity_record,
    entity_text,
    observation_key,
)
from domain.graph.model import Entity
from domain.model import VectorRecord

entity_records = Table(
    "graph_entity_records", metadata,
    Column("record_id", String(40), primary_key=True),
    Column("owner", String(100), nullable=False),
    Column("name", String(1000), nullable=False),
    Column("acl", Text, nullable=False),  # JSON list of access keys (the lexical index's access rule reads it)
    Column("sensitivity", String(16), nullable=False),
    Column("expires_epoch", Float, nullable=False),
    Column("ts_epoch", Float, nullable=False),
    Index("ix_graph_entity_records_owner", "owner", "name"),
)


def index_entities(conn: Connection, lexical: Any, owner: str, entities: Sequence[Entity],
                   given: Sequence[VectorRecord], now: float) -> None:
    """These entities (as they are now) as records: their row and words written again; the vectors of
    ``given`` that are theirs and not stored yet stored; each queued for the vector index."""
    records = {entity_record(owner, e.name): e for e in entities}
    if not records:
        return
    ids = list(records)
    kept = {row.record_id: row.ts_epoch for row in conn.execute(
        select(entity_records.c.record_id, entity_records.c.ts_epoch).where(entity_records.c.record_id.in_(ids)))}
    conn.execute(delete(entity_records).where(entity_records.c.record_id.in_(ids)))
    lexical.unindex_records(conn, ENTITIES, ids)
    rows = []
    for record, entity in records.items():
        fields = access(owner, kept.get(record, now))
        rows.append({"record_id": record, "owner": owner, "name": entity.name,
                     "acl": json.dumps([k.removeprefix("acl:") for k in fields if k.startswith("acl:")]),
                     "sensitivity": fields["sensitivity"], "expires_epoch": fields["expires_epoch"],
                     "ts_epoch": fields["ts_epoch"]})
    conn.execute(insert(entity_records), rows)
    lexical.index(conn, ENTITIES, [Doc(record, None, None, entity_text(e)) for record, e in records.items()])
    mine = [v for v in given if v.record_id in records]
    held = set(conn.execute(select(vectors.c.id).where(vectors.c.collection == ENTITIES,
                                                       vectors.c.owner.in_(ids))).scalars()) if mine else set()
    put_vectors(conn, ENTITIES, None, [v for v in {v.id: v for v in mine}.values() if v.id not in held])
    for record in ids:
        queue(conn, [ENTITIES], record)


def drop_observation_vectors(conn: Connection, owner: str, items: Sequence[tuple[str, Sequence[str]]]) -> None:
    """The vectors of these observations (entity name, observation texts), queued for the index."""
    for name, contents in items:
        record = entity_record(owner, name)
        gone = conn.execute(delete(vectors).where(
            vectors.c.collection == ENTITIES, vectors.c.owner == record,
            vectors.c.version.in_([observation_key(c) for c in contents]))).rowcount
        if gone:
            queue(conn, [ENTITIES], record)


def unindex_entities(conn: Connection, lexical: Any, owner: str, names: Sequence[str]) -> None:
    """The records of these entities (deleted): their rows, words and vectors, queued for the index."""
    ids = [entity_record(owner, n) for n in dict.fromkeys(names)]
    held = list(conn.execute(select(entity_records.c.record_id).where(entity_records.c.record_id.in_(ids))).scalars())
    if not held:
        return
    conn.execute(delete(entity_records).where(entity_records.c.record_id.in_(held)))
    lexical.unindex_records(conn, ENTITIES, held)
    conn.execute(delete(vectors).where(vectors.c.collection == ENTITIES, vectors.c.owner.in_(held)))
    for record in held:
        queue(conn, [ENTITIES], record)


def entity_docs(conn: Connection, read: Any) -> Iterator[tuple[str, Doc]]:
    """Every entity record's words, for a rebuild of the lexical index (``read``: owner, names -> entities)."""
    by_owner: dict[str, list[str]] = {}
    for owner, name in conn.execute(select(entity_records.c.owner, entity_records.c.name)).tuples():
        by_owner.setdefault(owner, []).append(name)
    for owner, names in by_owner.items():
        for entity in read(conn, owner, names):
            yield ENTITIES, Doc(entity_record(owner, entity.name), None, None, entity_text(entity))


def record_owners(conn: Connection, record_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """record id -> (owner, entity name) of those records that exist."""
    return {r: (o, n) for r, o, n in conn.execute(select(
        entity_records.c.record_id, entity_records.c.owner, entity_records.c.name).where(
        entity_records.c.record_id.in_(list(record_ids)))).tuples()}


def lexical_of(conn: Connection) -> Any:
    """The lexical index backend of the connection's database (for writes outside the store's methods)."""
    from adapters.sql.store import backend_for  # the store imports this module

    return backend_for(conn.dialect.name)
