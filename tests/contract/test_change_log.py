"""The change log contract against the in-memory fake, a SQLite file and a real PostgreSQL: each audited
write of a memory, a turn or an artifact leaves its changes in order, in the write's transaction, with the
item's scope and access fields (a deleted item's from its last change), and the filters narrow them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.memory.scopes import InMemoryStore
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.model import AuditEntry
from domain.validation import epoch
from tests.contract.metadata_store_contract import memory, turn


def entry(action: str, collection: str, *ids: str, ts: str = "2025-01-01T00:00:00Z", **detail: object) -> AuditEntry:
    return AuditEntry(action=action, collection=collection, item_ids=ids, actor="ana", ts=ts, detail=detail)


class ChangeLogContract:
    def test_writes_leave_their_changes_in_order(self, store) -> None:
        shared = dataclasses.replace(memory("mem_a"), acl=("u:ana", "t:eng"), conversation_id="c1")
        store.add_memory(shared, entry("store", "memory", "mem_a"))
        newer = dataclasses.replace(memory("mem_b", ts="2025-01-02T00:00:00Z"), supersedes="mem_a")
        store.supersede_memory(newer, entry("store", "memory", "mem_b", "mem_a", ts="2025-01-02T00:00:00Z",
                                            supersedes="mem_a"))
        store.put_turn(turn("c1", 0), entry("appended", "history", "c1_turn_0", ts="2025-01-03T00:00:00Z"))
        store.delete_memory("mem_a", entry("delete", "memory", "mem_a", ts="2025-01-04T00:00:00Z"))
        every = store.changes(None, None)
        assert [(c.kind, c.collection, c.item_id) for c in every] == [
            ("added", "memory", "mem_a"), ("added", "memory", "mem_b"), ("superseded", "memory", "mem_a"),
            ("added", "turn", "c1_turn_0"), ("deleted", "memory", "mem_a")]
        assert [c.seq for c in every] == sorted(c.seq for c in every)
        gone = every[-1]
        assert gone.conversation_id == "c1" and sorted(gone.access["acl"]) == ["t:eng", "u:ana"]  # from its last
        assert every[2].detail == {"superseded_by": "mem_b"} and every[1].detail == {"supersedes": "mem_a"}
        assert [c.item_id for c in store.changes(epoch("2025-01-02T00:00:00Z"), epoch("2025-01-03T00:00:00Z"))] == [
            "mem_b", "mem_a", "c1_turn_0"]
        assert [c.kind for c in store.changes(None, None, kinds=["deleted"])] == ["deleted"]
        assert [c.item_id for c in store.changes(None, None, conversation_id="c1")] == ["mem_a", "mem_a", "c1_turn_0",
                                                                                    "mem_a"]
        assert [c.item_id for c in store.changes(None, None, after=(every[2].at, every[2].seq), limit=1)] == ["c1_turn_0"]
        assert store.changes(None, None, item_ids=["mem_b"])[0].kind == "added"

    def test_an_entry_of_no_item_leaves_none(self, store) -> None:
        store.add_memory(memory("mem_a"), entry("denied", "memory", "mem_a"))
        assert store.changes(None, None) == []


class TestInMemoryChangeLog(ChangeLogContract):
    @pytest.fixture
    def store(self):
        return InMemoryStore()


class TestSqliteChangeLog(ChangeLogContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestPostgresChangeLog(ChangeLogContract):
    @pytest.fixture
    def store(self, postgres_url: str):
        from tests.support.postgres import fresh_database

        store = SqlStore(make_engine(fresh_database(postgres_url)))
        yield store
        store.close()
