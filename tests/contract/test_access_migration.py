"""A store written before items carried access fields opens with them: rows are the local owner's,
private and never expiring; their kept vectors carry the same access keys and are queued for the index."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.access.rules import NEVER
from domain.model import AuditEntry, EmbeddingProfile, Memory, VectorRecord

PROFILE = EmbeddingProfile("test", "m", 4, 256)
ENTRY = AuditEntry("store", "memory", ("mem_1",), "local", "2026-01-01T00:00:00Z")


def older_store(url: str) -> None:
    """A memory with one vector, then the access columns and the upgrade marker taken away."""
    store = SqlStore(make_engine(url))
    memory = Memory("mem_" + "a" * 32, "the deploy window is Friday", "fact", 0.9, "2026-01-01T00:00:00Z", None, 5,
                    PROFILE)
    store.add_memory(memory, ENTRY, [VectorRecord(f"{memory.id}::v1::0", memory.id, [1.0, 0, 0, 0],
                                                  {"type": "fact", "version": "v1"})])
    store.close()
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_memories_expires"))  # as before the columns existed
        for column in ("owner", "acl", "expires_epoch", "sensitivity", "visibility_scope", "retention_policy"):
            conn.execute(text(f"ALTER TABLE memories DROP COLUMN {column}"))
        conn.execute(text("DELETE FROM store_meta WHERE key = 'access_keys'"))
        conn.execute(text("UPDATE vectors SET meta = '{\"type\": \"fact\", \"version\": \"v1\"}'"))
        conn.execute(text("DELETE FROM vector_outbox"))
    engine.dispose()


def test_an_older_store_gets_the_local_owners_access_on_rows_and_vectors(sql_url: str) -> None:
    url = sql_url
    older_store(url)
    store = SqlStore(make_engine(url))
    try:
        (memory,) = store.get_memories(["mem_" + "a" * 32]).values()
        assert (memory.owner, memory.acl, memory.sensitivity, memory.visibility_scope, memory.expires_epoch) == (
            "local", ("u:local",), "normal", "me", NEVER)
        (vector,) = store.stored_vectors("memory", "", 10)
        # Its piece number is read from its id (adapters/sql/vector_meta.py), the rest is as it was plus access.
        assert vector.metadata == {"type": "fact", "version": "v1", "piece": 0, "acl:u:local": True,
                                   "sensitivity": "normal", "expires_epoch": NEVER}
        with store.claim(10) as items:
            assert [(i.collection, i.owner) for i in items] == [("memory", memory.id)]
        with store._engine.connect() as conn:  # noqa: SLF001 - the schema as upgraded
            assert "ix_memories_expires" in {i["name"] for i in inspect(conn).get_indexes("memories")}
    finally:
        store.close()
