"""Vectors kept in the SQL store beside their rows, and the outbox that carries them to the vector index.

The store is the source of truth: every write stores its records' vectors here and queues their
owner in the same transaction; a worker claims queued owners and makes the vector index match.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np  # at import, in one thread: numpy imported by two threads at once can half-load
from sqlalchemy import (
    BigInteger, Boolean, Column, Float, Index, Integer, LargeBinary, String, Table, Text, delete, func, insert,
    literal, select, text,
)
from sqlalchemy.engine import Connection, Engine

from adapters.sql.base import metadata
from adapters.sql.tables import put_meta
from adapters.sql.vector_meta import ARTIFACT_COLLECTIONS, pack, unpack
from adapters.vectors.blobs import decode, decode_rows, encode
from adapters.vectors.similarity import matches
from domain.ids import artifact_of, record_of, version_of
from domain.locking import KeyedLock
from domain.model import OutboxItem, Vector, VectorMatch, VectorRecord
from domain.ports import Filter, KeyLocks, VectorOutbox

vectors = Table(
    "vectors", metadata,
    Column("collection", String(32), primary_key=True),
    Column("id", String(255), primary_key=True),
    Column("owner", String(160), nullable=False),  # the record, or the artifact of a chunk
    Column("version", String(12), nullable=False),
    Column("pending", Boolean, nullable=False),  # of an artifact version not committed yet
    Column("embedding", LargeBinary, nullable=False),  # float16 (adapters/vectors/blobs.py); float32 before
    Column("meta", Text, nullable=False),
    Column("text_key", LargeBinary),  # VectorRecord.text_key's 12 bytes: a piece with the same text takes this vector
    Index("ix_vectors_owner", "collection", "owner"),
    Index("ix_vectors_text_key", "text_key", sqlite_where=text("text_key IS NOT NULL"),
          postgresql_where=text("text_key IS NOT NULL")),
)

outbox = Table(
    "vector_outbox", metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("collection", String(32), nullable=False),
    Column("owner", String(160), nullable=False),
    Column("fresh", Boolean, nullable=False, server_default=text("false")),  # see OutboxItem.fresh
)

jobs = Table(
    "ingest_jobs", metadata,
    Column("artifact_id", String(40), primary_key=True),
    Column("version", String(12), nullable=False),
    Column("status", String(10), nullable=False),
    Column("done", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("error", Text),
    Column("lease_owner", String(64)),
    Column("lease_until", Float, nullable=False),
    Column("request", Text),  # JSON: what to ingest, until its version is written
)

def put_vectors(conn: Connection, collection: str, owner: str | None, records: Sequence[VectorRecord],
                pending: bool = False) -> None:
    """``owner`` None: each record's own (its artifact for artifact and chunk vectors)."""
    rows = [{"collection": collection, "id": r.id, "owner": owner or owner_of(collection, r),
             "version": str(r.metadata.get("version") or (version_of(r.id) if r.id.count("::") >= 2 else "")),
             "pending": pending, "embedding": encode(r.vector), "meta": pack(collection, r),
             "text_key": bytes.fromhex(r.text_key) if r.text_key else None}
            for r in records]
    for start in range(0, len(rows), 1_000):
        conn.execute(insert(vectors), rows[start:start + 1_000])


def owner_of(collection: str, record: VectorRecord) -> str:
    return str(record.metadata.get("artifact_id")) if collection in ARTIFACT_COLLECTIONS else record.record_id


def drop_vectors(conn: Connection, collections: Sequence[str], owner: str, version: str | None = None) -> None:
    query = delete(vectors).where(vectors.c.collection.in_(list(collections)), vectors.c.owner == owner)
    if version is not None:
        query = query.where(vectors.c.version == version)
    conn.execute(query)


def queue(conn: Connection, collections: Sequence[str], owner: str, fresh: bool = False) -> None:
    if collections:
        conn.execute(insert(outbox), [{"collection": c, "owner": owner, "fresh": fresh} for c in collections])


def _record(row: Any) -> VectorRecord:
    return VectorRecord(id=row.id, record_id=record_of(row.id), vector=decode(row.embedding).tolist(),
                        metadata=unpack(row.collection.lstrip("~"), row.id, row.meta),
                        text_key=bytes(row.text_key).hex() if row.text_key else None)


class SqlVectorOutbox(VectorOutbox, KeyLocks):
    """The outbox and per-key locks over one engine: PostgreSQL row and advisory locks, else this process's."""

    _engine: Engine

    def _init_outbox(self) -> None:
        self._postgres = self._engine.dialect.name == "postgresql"
        self._claiming = threading.Lock()  # SQLite: one claimer per process (the owner of the data dir)
        self._keyed = KeyedLock()

    def last_queued(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(select(func.max(outbox.c.seq))).scalar() or 0)

    def oldest_queued(self) -> int | None:
        with self._engine.connect() as conn:
            found = conn.execute(select(func.min(outbox.c.seq))).scalar()
        return None if found is None else int(found)

    @contextmanager
    def claim(self, limit: int) -> Iterator[list[OutboxItem]]:
        if self._postgres:
            # Rows stay locked (others skip them) and owners stay locked (no two workers sync one
            # owner at once) until this transaction ends, after the index was updated.
            with self._engine.begin() as conn:
                rows = conn.execute(select(outbox).order_by(outbox.c.seq).limit(limit)
                                    .with_for_update(skip_locked=True)).all()
                for key in sorted({f"sync:{r.collection}:{r.owner}" for r in rows}):
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": key})
                yield self._items(conn, rows)
                if rows:
                    conn.execute(delete(outbox).where(outbox.c.seq.in_([r.seq for r in rows])))
            return
        with self._claiming:
            with self._engine.connect() as conn:
                rows = conn.execute(select(outbox).order_by(outbox.c.seq).limit(limit)).all()
                items = self._items(conn, rows)
            yield items
            if rows:
                with self._write() as conn:  # type: ignore[attr-defined]
                    conn.execute(delete(outbox).where(outbox.c.seq.in_([r.seq for r in rows])))

    def _items(self, conn: Connection, rows: Sequence[Any]) -> list[OutboxItem]:
        owned: dict[tuple[str, str], list[VectorRecord]] = {}
        wanted: dict[str, set[str]] = {}
        for row in rows:
            wanted.setdefault(row.collection, set()).add(row.owner)
            owned[(row.collection, row.owner)] = []
        for collection, owners in wanted.items():
            found = conn.execute(select(vectors).where(
                vectors.c.collection == collection, vectors.c.owner.in_(sorted(owners)),
                vectors.c.pending.is_(False)))
            for row in found:
                owned[(collection, row.owner)].append(_record(row))
        return [OutboxItem(r.seq, r.collection, r.owner, tuple(owned[(r.collection, r.owner)]), bool(r.fresh))
                for r in rows]

    def nearest_queued(self, collection: str, vector: Vector, limit: int,
                       where: Filter | None = None) -> tuple[set[str], list[VectorMatch]]:
        with self._engine.connect() as conn:
            owners = set(conn.execute(select(outbox.c.owner).where(outbox.c.collection == collection)
                                      .distinct()).scalars())
            if not owners:
                return set(), []
            rows = conn.execute(select(vectors.c.id, vectors.c.embedding, vectors.c.meta).where(
                vectors.c.collection == collection, vectors.c.owner.in_(sorted(owners)),
                vectors.c.pending.is_(False))).all()
        kept = [row for row in rows if matches(unpack(collection, row.id, row.meta), where)]
        if not kept:
            return owners, []
        found = decode_rows([row.embedding for row in kept])
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(found, axis=1) * (np.linalg.norm(query) or 1.0)
        scores = (found @ query) / np.where(norms == 0, 1.0, norms)
        best = np.argsort(-scores)[:limit]
        return owners, [VectorMatch(kept[i].id, record_of(kept[i].id), float(scores[i])) for i in best]

    def similarities(self, collection: str, vector: Vector, record_ids: Sequence[str]) -> dict[str, float]:
        wanted = set(record_ids)
        owners = sorted({artifact_of(r) if collection in ARTIFACT_COLLECTIONS else r for r in wanted})
        if not owners:
            return {}
        with self._engine.connect() as conn:
            rows = [row for row in conn.execute(select(vectors.c.id, vectors.c.embedding).where(
                vectors.c.collection == collection, vectors.c.owner.in_(owners), vectors.c.pending.is_(False)))
                if record_of(row.id) in wanted]
        if not rows:
            return {}
        found = decode_rows([row.embedding for row in rows])
        query = np.asarray(vector, dtype=np.float32)
        norms = np.linalg.norm(found, axis=1) * (np.linalg.norm(query) or 1.0)
        scores = (found @ query) / np.where(norms == 0, 1.0, norms)
        best: dict[str, float] = {}
        for row, score in zip(rows, scores):
            key = record_of(row.id)
            best[key] = max(best.get(key, -1.0), float(score))
        return best

    def stored_vectors(self, collection: str, after: str, limit: int) -> list[VectorRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(select(vectors).where(
                vectors.c.collection == collection, vectors.c.pending.is_(False), vectors.c.id > after)
                .order_by(vectors.c.id).limit(limit)).all()
        return [_record(row) for row in rows]

    def vectors_by_text(self, keys: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._engine.connect() as conn:
            for start in range(0, len(keys), 500):
                rows = conn.execute(select(vectors.c.text_key, vectors.c.embedding).where(
                    vectors.c.text_key.in_([bytes.fromhex(k) for k in keys[start:start + 500]])))
                found.update({bytes(row.text_key).hex(): decode(row.embedding).tolist() for row in rows})
        return found

    def count_vectors(self, collection: str) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(vectors).where(
                vectors.c.collection == collection, vectors.c.pending.is_(False))).scalar() or 0)

    def adopt_vectors(self, profile_key: str,
                      pages: Callable[[], Iterator[tuple[str, list[VectorRecord]]]]) -> int | None:
        meta = metadata.tables["store_meta"]
        with self.schema_lock(), self._write() as conn:  # type: ignore[attr-defined]
            current = conn.execute(select(meta.c.value).where(meta.c.key == "vectors_profile")).scalar()
            if current == profile_key:
                return None
            count = None
            # No marker but vectors: a store this release wrote from its start; nothing to take over.
            if current is not None or conn.execute(select(vectors.c.id).limit(1)).first() is None:
                # The index keeps only what it filters on: an adopted vector takes the rest of its
                # metadata (access fields, version) from the store's copy of the same piece, set aside.
                conn.execute(vectors.update().values(collection=literal("~") + vectors.c.collection))
                count = 0
                for collection, records in pages():
                    kept = dict(conn.execute(select(vectors.c.id, vectors.c.meta).where(
                        vectors.c.collection == f"~{collection}", vectors.c.id.in_([r.id for r in records]))).all())
                    put_vectors(conn, collection, None, [
                        replace(r, metadata={**unpack(collection, r.id, kept[r.id]), **r.metadata}) if r.id in kept else r
                        for r in records])
                    count += len(records)
                conn.execute(delete(vectors).where(vectors.c.collection.startswith("~")))
                self._adopted(conn)
            put_meta(conn, "vectors_profile", profile_key)
        return count

    def _adopted(self, conn: Connection) -> None:
        """In the adoption's transaction, after it: what the store's rows say that the index's copy may not."""

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._keyed.hold(key):  # threads of this process queue here, not on the database
            if not self._postgres:
                yield
                return
            with self._engine.connect() as conn:
                lock = {"k": f"key:{key}"}
                conn.execute(text("SELECT pg_advisory_lock(hashtextextended(:k, 0))"), lock)
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(hashtextextended(:k, 0))"), lock)
                    conn.commit()

    @contextmanager
    def schema_lock(self) -> Iterator[None]:
        """Table creation and migrations run once at a time across replicas (PostgreSQL)."""
        if not self._postgres:
            yield
            return
        with self._engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(hashtextextended('memtrove:schema', 0))"))
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(hashtextextended('memtrove:schema', 0))"))
                conn.commit()
