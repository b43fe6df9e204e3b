"""Read a stopped (or frozen, or copied) server's stores directly: the SQL tables and the embedded Chroma.

The crash test compares these with what an uninterrupted ingest leaves; nothing here goes through
memtrove's own adapters, so a bug in them cannot hide itself. SQLite and PostgreSQL are read alike
(SQLAlchemy Core, no pool); Chroma with the ``chromadb`` client and its ``chroma.sqlite3`` catalogue.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.sql.vector_meta import unpack

KINDS = ("memory", "history", "history_context", "artifact", "chunk")  # memtrove's collections


@dataclass(frozen=True)
class VectorRow:
    """One row of the SQL ``vectors`` table (its key is (collection, id))."""

    owner: str
    version: str
    pending: bool
    embedding: bytes  # float32, as stored
    meta: dict[str, Any]


@dataclass
class SqlState:
    artifact_rows: list[dict[str, Any]]  # every row of ``artifacts`` (any status)
    chunk_rows: list[dict[str, Any]]  # every row of ``artifact_chunks``, by artifact, version, index
    audit_rows: list[dict[str, Any]]
    vectors: dict[tuple[str, str], VectorRow]  # (collection, id) -> row
    outbox: list[tuple[str, str]]  # (collection, owner) of every queued item, in queue order
    jobs: list[dict[str, Any]]  # every row of ``ingest_jobs``
    lexical: set[tuple[str, str, str | None, str | None]]  # (collection, record_id, owner, version)


@dataclass
class ChromaState:
    vectors: dict[str, dict[str, dict[str, Any]]]  # kind -> vector id -> metadata ("other": any other collection)
    embeddings: dict[str, dict[str, bytes]]  # kind -> vector id -> float32 bytes
    collections: dict[str, str]  # collection name -> Chroma's collection id
    strays: list[str]  # entries of the chroma dir that belong to no live collection


@dataclass
class StoreSnapshot:
    sql: SqlState
    chroma: ChromaState


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'memtrove.sqlite3'}"


def read_sql(url: str) -> SqlState:
    """Every table the write path touches; a SQLite crash image is opened read-write (it may recover its journal)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            def rows(query: str) -> list[dict[str, Any]]:
                return [dict(r) for r in conn.execute(text(query)).mappings()]

            arts = [{**r, "is_chunked": bool(r["is_chunked"])} for r in rows("SELECT * FROM artifacts")]
            chunks = rows("SELECT * FROM artifact_chunks ORDER BY artifact_id, version, chunk_index")
            audit = rows("SELECT * FROM audit_log ORDER BY seq")
            vectors = {(r["collection"], r["id"]): VectorRow(r["owner"], r["version"], bool(r["pending"]),
                                                             bytes(r["embedding"]),
                                                             unpack(r["collection"], r["id"], r["meta"]))
                       for r in rows("SELECT * FROM vectors")}
            outbox = [(r["collection"], r["owner"]) for r in rows("SELECT * FROM vector_outbox ORDER BY seq")]
            jobs = rows("SELECT * FROM ingest_jobs ORDER BY artifact_id")
            lexical = {(r["collection"], r["record_id"], r["owner"], r["version"])
                       for r in rows("SELECT collection, record_id, owner, version FROM lexical_docs")}
    finally:
        engine.dispose()
    return SqlState(arts, chunks, audit, vectors, outbox, jobs, lexical)


_CHROMA_LOCK = threading.Lock()  # one Chroma client at a time in this process (its system cache is global)


@contextmanager
def chroma_exclusive() -> Iterator[None]:
    """Hold off the readers here (which clear Chroma's global client cache) while Chroma is used in-process."""
    from chromadb.api.client import SharedSystemClient

    with _CHROMA_LOCK:
        try:
            yield
        finally:
            SharedSystemClient.clear_system_cache()


@contextmanager
def _client(data_dir: Path) -> Iterator[Any]:
    import chromadb
    from chromadb.api.client import SharedSystemClient
    from chromadb.config import Settings

    with _CHROMA_LOCK:
        client = chromadb.PersistentClient(path=str(data_dir / "chroma"), settings=Settings(anonymized_telemetry=False))
        try:
            yield client
        finally:
            # The next test opens another directory; do not keep this one's system (and files) open.
            SharedSystemClient.clear_system_cache()


def chroma_files(data_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Chroma's catalogue (collection name -> id) and the entries of its dir no live collection owns.

    A live collection owns its segments' directories (``<segment id>/``); the catalogue is
    ``chroma.sqlite3`` (with its journal files). Anything else (a dropped collection's segment, a
    half-built copy) is an orphan.
    """
    chroma = data_dir / "chroma"
    if not (chroma / "chroma.sqlite3").exists():  # nothing reached the index yet: a new store makes none
        return {}, sorted(p.name for p in chroma.iterdir()) if chroma.is_dir() else []
    with closing(sqlite3.connect(chroma / "chroma.sqlite3")) as conn:
        collections = dict(conn.execute("SELECT name, id FROM collections").fetchall())
        segments = {row[0] for row in conn.execute(
            "SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection")}
    strays = sorted(p.name for p in chroma.iterdir()
                    if not (p.name.startswith("chroma.sqlite3") or (p.is_dir() and p.name in segments)))
    return collections, strays


def read_chroma(data_dir: Path) -> ChromaState:
    """Every vector (id, metadata, embedding) of every collection, and the directory's layout."""
    import numpy as np

    collections, strays = chroma_files(data_dir)
    vectors: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in (*KINDS, "other")}
    embeddings: dict[str, dict[str, bytes]] = {kind: {} for kind in (*KINDS, "other")}
    if not collections:
        return ChromaState(vectors, embeddings, collections, strays)
    with _client(data_dir) as client:
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            kind = name.split("__", 1)[0]
            col = client.get_collection(name)
            offset = 0
            while True:
                got = col.get(include=["metadatas", "embeddings"], limit=5000, offset=offset)
                for vid, meta, emb in zip(got["ids"], got["metadatas"], got["embeddings"], strict=True):
                    key = vid if kind in KINDS else f"{name}/{vid}"
                    bucket = kind if kind in KINDS else "other"
                    vectors[bucket][key] = dict(meta or {})
                    embeddings[bucket][key] = np.asarray(emb, dtype=np.float32).tobytes()
                if len(got["ids"]) < 5000:
                    break
                offset += 5000
    return ChromaState(vectors, embeddings, collections, strays)


def unreachable_vectors(data_dir: Path) -> dict[str, list[str]]:
    """Per collection kind, the vectors a query with their own stored embedding does not return first.

    Every vector of our artifacts is distinct, so each must be its own nearest neighbour; one that
    is not is stored (``get`` returns it) but can never be found by a search.
    """
    missed: dict[str, list[str]] = {"artifact": [], "chunk": []}
    with _client(data_dir) as client:
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            kind = name.split("__", 1)[0]
            if kind not in missed:
                continue
            col = client.get_collection(name)
            got = col.get(include=["embeddings"])
            ids, embeddings = list(got["ids"]), got["embeddings"]
            for start in range(0, len(ids), 500):
                found = col.query(query_embeddings=embeddings[start:start + 500], n_results=1, include=[])
                missed[kind] += [vid for vid, top in zip(ids[start:start + 500], found["ids"], strict=True)
                                 if top[:1] != [vid]]
    return missed


def snapshot(data_dir: Path, database_url: str | None = None) -> StoreSnapshot:
    """Both stores of a data directory no process has open (a stopped server's, or a copy)."""
    return StoreSnapshot(read_sql(database_url or sqlite_url(data_dir)), read_chroma(data_dir))


def wait_until_drained(database_url: str, timeout: float = 60.0) -> None:
    """Wait until a live server's outbox is empty: its vector worker moved everything into the index."""
    import time

    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url, poolclass=NullPool)
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as conn:
                queued = int(conn.execute(text("SELECT count(*) FROM vector_outbox")).scalar() or 0)
            if not queued:
                return
            assert time.monotonic() < deadline, f"{queued} outbox items not moved into the index in {timeout:.0f}s"
            time.sleep(0.05)
    finally:
        engine.dispose()


def wait_until_settled(database_url: str, timeout: float = 120.0, graph: bool = False) -> None:
    """Wait until a live server's background work is done: its outbox drained and, with ``graph`` (a server
    run with MEMTROVE_GRAPH_BACKGROUND=true), its background graph (domain/graph/follow.py) past every change
    logged, so that a snapshot of its tables holds still."""
    import json
    import time

    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    wait_until_drained(database_url, timeout)
    if not graph:
        return
    engine = create_engine(database_url, poolclass=NullPool)
    deadline = time.monotonic() + timeout
    try:
        while True:
            with engine.connect() as conn:
                last = int(conn.execute(text("SELECT max(seq) FROM changes")).scalar() or 0)
                raw = conn.execute(text("SELECT value FROM store_meta WHERE key = 'graph_follow'")).scalar()
            cursor = json.loads(raw)["seq"] if raw else 0
            if cursor >= last and not (json.loads(raw).get("holes") if raw else None):
                return
            assert time.monotonic() < deadline, f"the background graph is at change {cursor} of {last} after {timeout:.0f}s"
            time.sleep(0.1)
    finally:
        engine.dispose()


def clone_database(template_url: str) -> str:
    """A new PostgreSQL database copied from ``template_url``'s (which nobody may be connected to)."""
    import time

    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    base, template = template_url.rsplit("/", 1)
    name = f"c{time.monotonic_ns()}"
    engine = create_engine(template_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT",
                           poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))
    finally:
        engine.dispose()
    return f"{base}/{name}"


def expire_leases(database_url: str) -> int:
    """Make every ingest job's lease run out now: what a restart a lease's length later would find."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            return int(conn.execute(text("UPDATE ingest_jobs SET lease_until = 0")).rowcount)
    finally:
        engine.dispose()
