"""A store made before conversation ids were each owner's own (turns unique by (conversation_id, turn_index),
another owner's turns with ids of the local owner's form) keeps working after the upgrade: the key becomes
(conversation_id, owner, turn_index); another owner's turn gets its owner's id in its row, its lexical entry,
its vectors (queued for the index), its graph sources, the change log and the re-embed ledger; the local
owner's turns keep theirs; and the local owner can then start a conversation of the same id. SQLite (the
table is made again) and PostgreSQL (the constraint is swapped)."""

from __future__ import annotations

import dataclasses

from sqlalchemy import MetaData, Table, UniqueConstraint, inspect, select, text

from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from adapters.sql.tables import turns
from adapters.sql.vectors import outbox
from domain.ids import turn_id
from domain.model import AuditEntry, EmbeddingProfile, Turn, VectorRecord

PROFILE = EmbeddingProfile("fake", "hash", 4, 64)


def turn(conv: str, index: int, content: str, owner: str, tid: str) -> Turn:
    return Turn(id=tid, conversation_id=conv, role="user", content=content, turn_index=index,
                ts="2025-01-01T00:00:00Z", token_count=1, content_hash="h" * 64, profile=PROFILE, owner=owner,
                acl=(f"u:{owner}",))


def vectors_of(tid: str) -> dict[str, list[VectorRecord]]:
    return {c: [VectorRecord(f"{tid}::hhhhhhhhhhhh::0", tid, [0.1, 0.2, 0.3, 0.4], {"version": "hhhhhhhhhhhh"})]
            for c in ("history", "history_context")}


def entry(tid: str) -> AuditEntry:
    return AuditEntry(action="appended", collection="history", item_ids=(tid,), actor="x", ts="2025-01-01T00:00:00Z")


def as_before(url: str) -> None:
    """The turns table of the release before (its key, its mark gone), and bob's turn with a local-form id."""
    engine = make_engine(url)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("ALTER TABLE turns DROP CONSTRAINT uq_turn_owner_position"))
            conn.execute(text("ALTER TABLE turns ADD CONSTRAINT uq_turn_position UNIQUE (conversation_id, turn_index)"))
        else:
            for index in inspect(conn).get_indexes("turns"):
                conn.execute(text(f'DROP INDEX "{index["name"]}"'))
            conn.execute(text("ALTER TABLE turns RENAME TO turns_now"))
            old = Table("turns", MetaData(), *(c._copy() for c in turns.columns),
                        UniqueConstraint("conversation_id", "turn_index", name="uq_turn_position"))
            old.create(conn)
            conn.execute(text("INSERT INTO turns SELECT * FROM turns_now"))
            conn.execute(text("DROP TABLE turns_now"))
        conn.execute(text("DELETE FROM store_meta WHERE key = 'turn_keys'"))
    engine.dispose()


def test_an_older_stores_turns_get_keys_and_ids_of_their_owners(sql_url: str) -> None:
    store = SqlStore(make_engine(sql_url))
    try:  # as the release before wrote them: one conversation id, one owner; bob's id of the local form
        store.put_turn(turn("mine", 0, "the local owner's lighthouse", "local", "mine_turn_0"), entry("mine_turn_0"),
                       vectors_of("mine_turn_0"))
        store.put_turn(turn("shared", 0, "bob's zqkeeper notes", "bob", "shared_turn_0"), entry("shared_turn_0"),
                       vectors_of("shared_turn_0"))
        store.mark_reembedded("profile", [("turn:shared_turn_0", "v")])
        with store._engine.begin() as conn:
            conn.execute(text("INSERT INTO graph_sources VALUES ('bob', 'turn', 'shared_turn_0', 'd')"))
    finally:
        store.close()
    as_before(sql_url)
    bob = turn_id("shared", 0, "bob")
    for _ in range(2):  # the second start finds nothing left to do
        store = SqlStore(make_engine(sql_url))
        try:
            keys = [k["column_names"] for k in inspect(store._engine).get_unique_constraints("turns")]
            assert ["conversation_id", "owner", "turn_index"] in keys and ["conversation_id", "turn_index"] not in keys
            assert set(store.turn_hashes()) == {"mine_turn_0", bob}
            assert store.get_turn("bob", "shared", 0).id == bob and store.get_turn("local", "shared", 0) is None
            assert [m.record_id for m in store.lexical_search("history", ["zqkeeper"], 5)] == [bob]
            for collection in ("history", "history_context"):
                assert {r.id for r in store.stored_vectors(collection, "", 10)} == {
                    "mine_turn_0::hhhhhhhhhhhh::0", f"{bob}::hhhhhhhhhhhh::0"}
            assert [c.item_id for c in store.changes(None, None) if c.collection == "turn"] == ["mine_turn_0", bob]
            assert store.reembedded("profile") == {f"turn:{bob}": "v"}
            with store._engine.connect() as conn:
                assert conn.execute(text("SELECT origin_id FROM graph_sources")).scalars().all() == [bob]
                queued = set(conn.execute(select(outbox.c.collection, outbox.c.owner)).tuples())
            assert {("history", "shared_turn_0"), ("history", bob), ("history_context", bob)} <= queued
        finally:
            store.close()
    store = SqlStore(make_engine(sql_url))
    try:  # the local owner's conversation of the same id: beside bob's, not in its place
        store.put_turn(turn("shared", 0, "the local owner's own", "local", "shared_turn_0"), entry("shared_turn_0"))
        assert store.get_turn("local", "shared", 0).content == "the local owner's own"
        assert store.get_turn("bob", "shared", 0).content == "bob's zqkeeper notes"
        replaced = dataclasses.replace(store.get_turn("bob", "shared", 0), content="bob's again")
        store.put_turn(replaced, entry(bob))
        assert [t.content for t in store.recent_turns("local", "shared", 5)] == ["the local owner's own"]
    finally:
        store.close()
