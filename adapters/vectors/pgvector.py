"""PostgreSQL + pgvector as the vector index: table ``vec_<profile key>`` per embedding profile.

Columns collection, id (the primary key together), record_id (btree with collection), embedding
vector(dims), meta jsonb (GIN, jsonb_path_ops). Each collection has a partial HNSW index (cosine; m, ef_construction by
dimensions, spec 004 Part 1): a small collection beside a big one walks its own graph. Queries write
the (validated) collection as a literal so the planner matches that predicate. pgvector's HNSW takes
``vector`` of at most 2,000 dimensions: above, index and ORDER BY use ``embedding::halfvec(dims)``
(up to 4,000; beyond, exact scans). Scores: 1 - full-precision cosine distance. Vectors travel as
the text literal '[1,2,3]' cast to vector (no client-side type adapter)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from adapters.vectors.pgvector_filters import filter_sql
from adapters.sql.store import make_engine
from domain.errors import StorageError
from domain.model import EmbeddingProfile, Vector, VectorMatch, VectorRecord
from domain.ports import Filter, VectorIndex

_BATCH = 500
HNSW_MAX_VECTOR = 2_000  # pgvector: an HNSW index on ``vector`` holds at most 2,000 dimensions
HNSW_MAX_HALFVEC = 4_000  # ... and on ``halfvec`` at most 4,000
EF_SEARCH_DEFAULT, EF_SEARCH_MAX = 40, 1_000
_COLLECTION = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
EXTENSION = "vector"
_SETUP_LOCK = 0x6D656D74  # advisory lock key serialising CREATE EXTENSION/TABLE/INDEX across replicas
# (up to dims, m, ef_construction): spec 004's 768 -> 12/48, 1024 -> 16/64, more above; ef >= 2m
_HNSW_TIERS = ((768, 12, 48), (1024, 16, 64), (1536, 24, 128))


def hnsw_parameters(dimensions: int) -> tuple[int, int]:
    return next(((m, ef) for top, m, ef in _HNSW_TIERS if dimensions <= top), (32, 200))


def ef_search_for(limit: int) -> int:
    """Spec 004's dynamic ef_search: max(40, 2 * limit), within pgvector's bound of 1,000."""
    return min(EF_SEARCH_MAX, max(EF_SEARCH_DEFAULT, 2 * limit))


class PgVectorIndex(VectorIndex):
    """The VectorIndex port on PostgreSQL with the ``vector`` extension (an engine, or a URL to own one)."""

    def __init__(self, profile: EmbeddingProfile, engine_or_url: Engine | str) -> None:
        self.profile, self._own_engine = profile, isinstance(engine_or_url, str)
        # A URL gets the store's engine, with psycopg 3 (not SQLAlchemy's default psycopg2 for postgresql://).
        self._engine = make_engine(re.sub(r"^postgres(ql)?://", "postgresql+psycopg://", engine_or_url)) \
            if isinstance(engine_or_url, str) else engine_or_url
        self.table, dims = _name("vec", profile.key), profile.dimensions
        # What the HNSW index and the ORDER BY compare: a halfvec copy above 2,000 dimensions.
        self._kind, half = ("vector", "") if dims <= HNSW_MAX_VECTOR else ("halfvec", f"::halfvec({dims})")
        self._indexed, self._probe = f"(embedding{half})", f"CAST(:q AS vector){half}"
        self._lock, self._ready, self._iterative = threading.Lock(), False, False  # iterative: pgvector 0.8+
        self._indexed_collections: set[str] = set()  # whose HNSW index is known to exist

    def upsert(self, collection: str, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        sql = text(f"INSERT INTO {self.table} (collection, id, record_id, embedding, meta) VALUES (:c, :id, :rid, "
                   "CAST(:e AS vector), CAST(:m AS jsonb)) ON CONFLICT (collection, id) DO UPDATE SET "
                   "record_id = EXCLUDED.record_id, embedding = EXCLUDED.embedding, meta = EXCLUDED.meta")
        with self._transaction("store vectors", collection) as conn:
            for start in range(0, len(records), _BATCH):  # psycopg pipelines each batch's statements
                conn.execute(sql, [{"c": collection, "id": r.id, "rid": r.record_id, "e": vector_literal(r.vector),
                                    "m": json.dumps({k: v for k, v in r.metadata.items() if v is not None})}
                                   for r in records[start:start + _BATCH]])

    def delete_records(self, collection: str, record_ids: Sequence[str]) -> None:
        if record_ids:
            self._delete(collection, "record_id = ANY(:ids)", {"ids": list(record_ids)})

    def delete_vectors(self, collection: str, vector_ids: Sequence[str]) -> None:
        if vector_ids:
            self._delete(collection, "id = ANY(:ids)", {"ids": list(vector_ids)})

    def delete_where(self, collection: str, where: Filter) -> None:
        conditions, params = filter_sql(where)
        self._delete(collection, "true" + conditions, params)

    def drop(self, collection: str) -> None:
        self._delete(collection, "true", {})
        self.rebuild(collection)  # an empty graph again

    def rebuild(self, collection: str) -> None:
        """Build the collection's HNSW graph afresh from its live rows, CONCURRENTLY: searches and writes
        go on meanwhile (a failed run leaves an invalid ``..._ccnew`` index for DROP INDEX)."""
        if self.profile.dimensions > HNSW_MAX_HALFVEC:
            return  # no graph: exact scans need no repair
        with self._transaction("rebuild the index", collection):
            pass  # the index exists
        try:
            with self._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql(f"REINDEX INDEX CONCURRENTLY {self._index_name(collection)}")
        except SQLAlchemyError as exc:
            raise self._error("rebuild the index", exc) from exc

    def query(self, collection: str, vector: Vector, limit: int, where: Filter | None = None) -> list[VectorMatch]:
        sql, params = self._query_sql(collection, where, max(limit, 0))
        with self.searching(limit) as conn:
            rows = conn.execute(text(sql), {**params, "q": vector_literal(vector)}).all()
        # relaxed_order may hand neighbours back slightly out of order: the exact distance decides.
        return sorted((VectorMatch(vid, rid, 1.0 - float(d)) for vid, rid, d in rows), key=lambda m: -m.score)

    @contextmanager
    def searching(self, limit: int) -> Iterator[Connection]:
        """A transaction with ``limit``'s search settings, local to it: ef_search, iterative scans."""
        self._setup()
        try:
            with self._engine.begin() as conn:
                conn.execute(text("SELECT set_config('hnsw.ef_search', :ef, true)"
                                  + (", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
                                     if self._iterative else "")), {"ef": str(ef_search_for(limit))})
                yield conn
        except SQLAlchemyError as exc:
            raise self._error("search vectors", exc) from exc

    def vectors_of(self, collection: str, record_ids: Sequence[str]) -> dict[str, list[str]]:
        owned: dict[str, list[str]] = {}
        for rid, vid in self._read(f"SELECT record_id, id FROM {self.table} WHERE collection = :c "
                                   "AND record_id = ANY(:ids) ORDER BY id", c=collection, ids=list(record_ids)):
            owned.setdefault(rid, []).append(vid)
        return owned

    def all_vectors(self, collection: str) -> dict[str, str]:
        return dict(self._read(f"SELECT id, record_id FROM {self.table} WHERE collection = :c", c=collection))

    def vector_ids(self, collection: str, where: Filter) -> list[str]:
        conditions, params = filter_sql(where)
        return [vid for (vid,) in self._read(f"SELECT id FROM {self.table} WHERE collection = :c{conditions} "
                                             "ORDER BY id", c=collection, **params)]

    def export(self, collection: str, offset: int, limit: int) -> list[VectorRecord]:
        rows = self._read(f"SELECT id, record_id, embedding::text, meta FROM {self.table} WHERE collection = :c "
                          "ORDER BY id OFFSET :o LIMIT :l", c=collection, o=offset, l=limit)
        return [VectorRecord(vid, rid, [float(x) for x in json.loads(vec)], dict(meta)) for vid, rid, vec, meta in rows]

    def count(self, collection: str) -> int:
        return int(self._read(f"SELECT count(*) FROM {self.table} WHERE collection = :c", c=collection)[0][0])

    def storage_bytes(self) -> int:
        return 0  # its table is in the store's database, which pg_database_size already counts

    def close(self) -> None:
        if self._own_engine:
            self._engine.dispose()

    def _query_sql(self, collection: str, where: Filter | None, limit: int) -> tuple[str, dict[str, Any]]:
        """The shape that walks the HNSW graph: ORDER BY <indexed> <=> :q LIMIT k, filters in the scan."""
        conditions, params = filter_sql(where)
        return (f"SELECT id, record_id, embedding <=> CAST(:q AS vector) AS distance FROM {self.table} "
                f"WHERE collection = {_literal(collection)}{conditions} "
                f"ORDER BY {self._indexed} <=> {self._probe} LIMIT {int(limit)}"), params

    def _index_name(self, collection: str) -> str:
        return _name(self.table, collection, suffix="_hnsw")

    def _ensure_index(self, conn: Connection, collection: str) -> bool:
        """The collection's HNSW index exists (created here if not); False above 4,000 dimensions."""
        if collection in self._indexed_collections or conn.execute(text(
                "SELECT 1 FROM pg_indexes WHERE indexname = :n"), {"n": self._index_name(collection)}).first():
            return True
        if self.profile.dimensions > HNSW_MAX_HALFVEC:
            return False
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SETUP_LOCK})
        conn.exec_driver_sql(f"CREATE INDEX IF NOT EXISTS {self._index_name(collection)} ON {self.table} USING hnsw "
                             f"({self._indexed} {self._kind}_cosine_ops) WITH (m = %d, ef_construction = %d) "
                             % hnsw_parameters(self.profile.dimensions) + f"WHERE collection = {_literal(collection)}")
        return True

    def _setup(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            try:
                with self._engine.begin() as conn:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SETUP_LOCK})
                    version = self._extension(conn)
                    conn.exec_driver_sql(
                        f"CREATE TABLE IF NOT EXISTS {self.table} (collection text NOT NULL, id text NOT NULL, "
                        f"record_id text NOT NULL, embedding vector({self.profile.dimensions}) NOT NULL, meta "
                        "jsonb NOT NULL DEFAULT '{}', PRIMARY KEY (collection, id)); CREATE INDEX IF NOT EXISTS "
                        f"{_name(self.table, 'record', suffix='_rec')} ON {self.table} (collection, record_id); "
                        f"CREATE INDEX IF NOT EXISTS {_name(self.table, 'meta', suffix='_gin')} ON {self.table} "
                        "USING gin (meta jsonb_path_ops)")
            except SQLAlchemyError as exc:
                raise self._error("prepare the vector table", exc) from exc
            self._iterative = tuple(int(p) for p in re.findall(r"\d+", version)[:2]) >= (0, 8)
            self._ready = True

    def _extension(self, conn: Connection) -> str:
        """The installed pgvector's version, after CREATE EXTENSION if it is not in the database yet."""
        installed = text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        if (version := conn.execute(installed).scalar()) is not None:
            return str(version)
        try:
            with conn.begin_nested():
                conn.exec_driver_sql(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
        except SQLAlchemyError as exc:
            major = conn.exec_driver_sql("SELECT current_setting('server_version_num')::int / 10000").scalar()
            raise StorageError(
                "PostgreSQL cannot create the pgvector extension (CREATE EXTENSION vector): install it on the "
                f"database server (Debian/Ubuntu: apt-get install postgresql-{major}-pgvector) or have an "
                f"administrator run CREATE EXTENSION vector there. {_first_line(exc)}") from exc
        return str(conn.execute(installed).scalar())

    @contextmanager
    def _transaction(self, what: str, collection: str | None = None) -> Iterator[Connection]:
        """A write transaction; the first write into a collection creates its HNSW index with it."""
        self._setup()
        indexed = False
        try:
            with self._engine.begin() as conn:
                if collection is not None:
                    indexed = self._ensure_index(conn, _literal(collection).strip("'"))
                yield conn
        except SQLAlchemyError as exc:
            raise self._error(what, exc) from exc
        if indexed:
            self._indexed_collections.add(collection or "")  # committed: no need to look again

    def _delete(self, collection: str, condition: str, params: dict[str, Any]) -> None:
        with self._transaction("delete vectors") as conn:
            conn.execute(text(f"DELETE FROM {self.table} WHERE collection = :c AND {condition}"),
                         {"c": collection, **params})

    def _read(self, sql: str, **params: Any) -> list[Any]:
        with self._transaction("read vectors") as conn:  # a transaction that writes nothing
            return list(conn.execute(text(sql), params).all())

    def _error(self, what: str, exc: Exception) -> StorageError:
        return StorageError(f"Failed to {what} in PostgreSQL (pgvector table {self.table}): {_first_line(exc)}")


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, '[x,y,...]' (float4 precision: 9 significant digits round-trip)."""
    return "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"


def _literal(collection: str) -> str:
    if not _COLLECTION.match(collection):
        raise ValueError(f"collection name {collection!r}: letters, digits and _.:- only")
    return f"'{collection}'"


def _name(prefix: str, raw: str, suffix: str = "") -> str:
    """A PostgreSQL identifier (at most 63 bytes): lower-case alphanumerics and _, hashed if too long."""
    name = f"{prefix}_{re.sub(r'[^a-z0-9]', '_', raw.lower())}"
    if len(name + suffix) <= 63:
        return name + suffix
    return f"{name[:63 - len(suffix) - 11]}_{hashlib.sha1(f'{prefix}/{raw}'.encode()).hexdigest()[:10]}{suffix}"


def _first_line(exc: Exception) -> str:
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip() or type(orig).__name__).splitlines()[0]
