"""SQLAlchemy 2.x store (SQLite by default, PostgreSQL by URL): the source of truth, plus the audit log."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import create_engine, delete, event, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from adapters.lexical.fts import MEMORY_INDEXES, Doc, LexicalBackend
from adapters.lexical.sqlite import SqliteFts5
from adapters.sql.base import metadata
from adapters.sql.graph_derived import forget_records
from adapters.sql.turn_keys import migrate_turn_keys
from adapters.sql.turns import SqlTurns, turn_docs
from adapters.sql.tables import (  # noqa: F401 - the tables' home; artifacts and ledger import them here
    VALIDITY, _memory, _profile, _profile_columns, _profile_values, access_values, add_access_columns,
    add_validity_columns, audit, memories, put_meta, store_meta, turns,
)
from adapters.sql.memory_validity import (
    add_interval_columns, end_memory, restamp_all, search_both, split_words, upgrade as upgrade_intervals, word_index,
    word_rows,
)
from adapters.sql.vector_migrations import backfill_access, migrate_vector_tables
from adapters.sql.vectors import SqlVectorOutbox, drop_vectors, put_vectors, queue
from domain.errors import StorageError
from domain.memories.validity import interval_metadata
from domain.model import AuditEntry, EmbeddingProfile, LexicalMatch, Memory, VectorRecord
from domain.ports import AuditLog, Filter, LexicalIndex, MetadataStore
from domain.search.lexical import LexicalStats
from domain.validation import epoch

T = TypeVar("T")

def make_engine(url: str) -> Engine:
    """An engine with SQLite tuned for a single local writer (WAL, real foreign keys).

    PostgreSQL gets a pool deep enough for concurrent clients: a per-key lock holds a connection
    while its work (an embedding) runs, beside the connections of the writes themselves.
    """
    if url.startswith("sqlite"):
        engine = create_engine(url, future=True)
    else:
        engine = create_engine(url, future=True, pool_pre_ping=True, pool_size=10, max_overflow=40)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # A new store's pages are 8 KB: a chunk row (text, ids, chunker metadata) or a vector row
            # (embedding and metadata) is 1.2-1.6 KB, and two of them per 4 KB page left a quarter of
            # each page empty (-660 B a chunk at 1.2 KB chunks). An existing store keeps its pages.
            cursor.execute("PRAGMA page_size=8192")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=5000")
            cursor.close()
    return engine


class SqlMetadataStore(SqlTurns, SqlVectorOutbox, MetadataStore, AuditLog, LexicalIndex):
    """Rows, their lexical index entries, their vectors, the outbox and the audit entries: one transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lexical = backend_for(engine.dialect.name)
        # SQLite takes one writer at a time: this process's writers queue on a lock (at once, in
        # order) rather than on SQLite's busy timeout (polling, "database is locked" past 5 s).
        self._write_lock = threading.RLock() if engine.dialect.name == "sqlite" else None
        self._init_outbox()
        with self.schema_lock():
            self._guard(lambda: metadata.create_all(engine), "create tables")
            self._guard(self._upgrade, "upgrade the tables")
            self._guard(self._prepare_lexical, "prepare the lexical index")

    def _upgrade(self) -> None:
        with self._engine.begin() as conn:
            self._migrate(conn)
            if conn.execute(select(store_meta.c.value).where(store_meta.c.key == "access_keys")).scalar() is None:
                backfill_access(conn)
                put_meta(conn, "access_keys", "1")
            upgrade_intervals(conn)

    def _migrate(self, conn: Connection) -> None:
        """Bring tables created by an older release up to date (subclasses add their own steps):
        memories and turns get their access columns (the local owner's, private, never expiring)."""
        add_access_columns(conn, "memories", privacy=True)
        add_access_columns(conn, "turns", privacy=True)
        migrate_vector_tables(conn)
        add_validity_columns(conn)
        add_interval_columns(conn)
        migrate_turn_keys(conn)  # a conversation id is each owner's own (after the outbox has its columns)

    def _prepare_lexical(self) -> None:
        """Create the text index; (re)build it from the rows when it is new or of an older version."""
        from adapters.lexical.fts import INDEX_VERSION

        with self._engine.begin() as conn:
            built = conn.execute(select(store_meta.c.value).where(store_meta.c.key == "lexical_index")).scalar()
            if built != INDEX_VERSION:
                self._lexical.reset(conn)
            self._lexical.create(conn)
            if built != INDEX_VERSION:
                self._lexical.rebuild(conn, self._lexical_rows(conn))
                put_meta(conn, "lexical_index", INDEX_VERSION)
            split_words(conn, self._lexical, rebuilt=built != INDEX_VERSION)

    def _lexical_rows(self, conn: Connection) -> Iterator[tuple[str, Doc]]:
        yield from word_rows(conn)
        yield from turn_docs(conn)

    def lexical_stats(self, collection: str, words: Sequence[str], tokens: Sequence[str] = ()) -> LexicalStats:
        with self._read() as conn:
            return self._lexical.stats(conn, collection, words, tokens)  # memories: the live index

    def lexical_search(self, collection: str, words: Sequence[str], limit: int, where: Filter | None = None,
                       context_weight: float = 0.35, idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
        with self._read() as conn:
            idf = self._lexical.own_idf(conn, collection, words) if idf is None else idf
            if collection != "memory":
                return self._lexical.search(conn, collection, words, limit, where, context_weight, idf)
            return search_both(conn, lambda c: self._lexical.search(conn, c, words, limit, where, context_weight,
                                                                    idf), limit, where)

    def exact_search(self, collection: str, tokens: Sequence[str], limit: int, where: Filter | None = None,
                     idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
        with self._read() as conn:
            idf = self._lexical.own_idf(conn, collection, tokens, exact=True) if idf is None else idf
            if collection != "memory":
                return self._lexical.exact(conn, collection, tokens, limit, where, idf)
            return search_both(conn, lambda c: self._lexical.exact(conn, c, tokens, limit, where, idf), limit, where)

    def close(self) -> None:
        self._engine.dispose()

    def stored_profile(self) -> EmbeddingProfile | None:
        with self._read() as conn:
            raw = conn.execute(select(store_meta.c.value).where(store_meta.c.key == "embedding_profile")).scalar()
        return EmbeddingProfile(**json.loads(raw)) if raw else None

    def record_profile(self, profile: EmbeddingProfile, replace: bool = True) -> None:
        value = json.dumps({"provider": profile.provider, "model": profile.model,
                            "dimensions": profile.dimensions, "max_tokens": profile.max_tokens})
        with self._write() as conn:
            put_meta(conn, "embedding_profile", value, replace)

    def add_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> None:
        with self._write() as conn:
            self._insert_memory(conn, memory, entry, vectors)

    def replace_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> bool:
        with self._write() as conn:
            if not conn.execute(delete(memories).where(memories.c.id == memory.id)).rowcount:
                return False
            for index in MEMORY_INDEXES:
                self._lexical.unindex_records(conn, index, [memory.id])
            drop_vectors(conn, ["memory"], memory.id)
            forget_records(conn, "memory", [memory.id])  # its graph facts: read again by the next build
            self._insert_memory(conn, memory, entry, vectors)
        return True

    def _insert_memory(self, conn: Connection, memory: Memory, entry: AuditEntry,
                       vectors: Sequence[VectorRecord]) -> None:
        conn.execute(insert(memories).values(
            id=memory.id, content=memory.content, type=memory.type, confidence=memory.confidence,
            ts=memory.ts, ts_epoch=epoch(memory.ts), conversation_id=memory.conversation_id,
            token_count=memory.token_count, **_profile_values(memory.profile), **access_values(memory),
            **{name: getattr(memory, name) for name in VALIDITY}, **interval_metadata(memory)))
        self._lexical.index(conn, word_index(memory), [Doc(memory.id, None, None, memory.content)])
        put_vectors(conn, "memory", memory.id, vectors)
        queue(conn, ["memory"], memory.id)
        self._append(conn, entry)

    def _adopted(self, conn: Connection) -> None:
        # Memories' intervals as their rows say: the adopted vectors may have been written before a supersession.
        restamp_all(conn)

    def supersede_memory(self, memory: Memory, entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> str | None:
        with self._write() as conn:
            refused = end_memory(conn, self._lexical, memory.supersedes or "", memory.valid_from or memory.ts,
                                 memory.id)
            if refused is None:
                self._insert_memory(conn, memory, entry, vectors)
        return refused

    def get_memories(self, ids: Sequence[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(select(memories).where(memories.c.id.in_(list(ids)))).mappings().all()
        return {row["id"]: _memory(row) for row in rows}

    def list_memories(self, type: str | None, limit: int, before: tuple[str, str] | None = None) -> list[Memory]:
        query = select(memories).order_by(memories.c.ts_epoch.desc(), memories.c.id.desc()).limit(limit)
        if type:
            query = query.where(memories.c.type == type)
        if before is not None:
            at = epoch(before[0])
            query = query.where((memories.c.ts_epoch < at) | ((memories.c.ts_epoch == at) & (memories.c.id < before[1])))
        with self._read() as conn:
            return [_memory(row) for row in conn.execute(query).mappings()]

    def delete_memory(self, memory_id: str, entry: AuditEntry) -> bool:
        with self._write() as conn:
            gone = conn.execute(delete(memories).where(memories.c.id == memory_id)).rowcount
            if gone:
                for index in MEMORY_INDEXES:
                    self._lexical.unindex_records(conn, index, [memory_id])
                drop_vectors(conn, ["memory"], memory_id)
                forget_records(conn, "memory", [memory_id])
                queue(conn, ["memory"], memory_id)
                self._append(conn, entry)
        return bool(gone)

    def memory_ids(self) -> set[str]:
        with self._read() as conn:
            return set(conn.execute(select(memories.c.id)).scalars())

    def expired_items(self, collection: str, now: float, limit: int) -> list[str]:
        table = {"memory": memories, "history": turns}[collection]
        query = (select(table.c.id).where(table.c.expires_epoch <= now)
                 .order_by(table.c.expires_epoch, table.c.id).limit(limit))
        with self._read() as conn:
            return list(conn.execute(query).scalars())

    def replace_vectors(self, collection: str, owner: str, records: Sequence[VectorRecord]) -> None:
        with self._write() as conn:
            drop_vectors(conn, [collection], owner)
            put_vectors(conn, collection, owner, records)
            queue(conn, [collection], owner)

    def append(self, entry: AuditEntry) -> None:
        with self._write() as conn:
            self._append(conn, entry)

    def recent(self, limit: int) -> list[AuditEntry]:
        with self._read() as conn:
            rows = conn.execute(select(audit).order_by(audit.c.seq.desc()).limit(limit)).mappings().all()
        return [AuditEntry(action=r["action"], collection=r["collection"], item_ids=tuple(json.loads(r["item_ids"])),
                           actor=r["actor"], ts=r["ts"], detail=json.loads(r["detail"])) for r in rows]

    @staticmethod
    def _append(conn: Connection, entry: AuditEntry) -> None:
        conn.execute(insert(audit).values(
            ts=entry.ts, actor=entry.actor, action=entry.action, collection=entry.collection,
            item_ids=json.dumps(list(entry.item_ids)), detail=json.dumps(entry.detail, sort_keys=True)))

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        if self._write_lock is not None:
            with self._write_lock:
                with self._transaction() as conn:
                    yield conn
            return
        with self._transaction() as conn:
            yield conn

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        try:
            with self._engine.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"Failed to write to the metadata store: {exc.__class__.__name__}: {exc.orig if hasattr(exc, 'orig') else exc}") from exc

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        try:
            with self._engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"Failed to read the metadata store: {exc.__class__.__name__}") from exc

    @staticmethod
    def _guard(action: Callable[[], T], what: str) -> T:
        try:
            return action()
        except SQLAlchemyError as exc:
            raise StorageError(f"Failed to {what} in the metadata store: {exc}") from exc


def backend_for(dialect: str) -> LexicalBackend:
    if dialect == "sqlite":
        return SqliteFts5()
    if dialect == "postgresql":
        from adapters.lexical.postgres import PostgresFullText

        return PostgresFullText()
    raise ValueError(f"no lexical index for the {dialect} dialect")
