"""The behaviour every MetadataStore (and its AuditLog) shares; subclass as ``Test...`` to run it."""

from __future__ import annotations

import dataclasses

import pytest

from domain.ids import turn_id
from domain.model import AuditEntry, EmbeddingProfile, Memory, Turn
from domain.ports import AuditLog, MetadataStore
from domain.memories.validity import holds
from domain.validation import epoch

PROFILE = EmbeddingProfile("fake", "hash", 64, 64)


def memory(mid: str, kind: str = "fact", ts: str = "2025-01-01T00:00:00Z", content: str = "x") -> Memory:
    return Memory(id=mid, content=content, type=kind, confidence=0.5, ts=ts, conversation_id=None,
                  token_count=1, profile=PROFILE)


def turn(conv: str, index: int, content: str = "hello", digest: str = "h" * 64, owner: str = "local") -> Turn:
    return Turn(id=turn_id(conv, index, owner), conversation_id=conv, role="user", content=content, turn_index=index,
                ts="2025-01-01T00:00:00Z", token_count=1, content_hash=digest, profile=PROFILE, owner=owner,
                acl=(f"u:{owner}",))


def entry(action: str, *ids: str) -> AuditEntry:
    return AuditEntry(action=action, collection="memory", item_ids=ids, actor="test", ts="2025-01-01T00:00:00Z",
                      detail={"n": 1})


class MetadataStoreContract:
    """Subclasses override the ``store`` fixture with a fresh, empty store (also an AuditLog)."""

    @pytest.fixture
    def store(self) -> MetadataStore:
        raise NotImplementedError

    def test_satisfies_the_ports(self, store: MetadataStore) -> None:
        assert isinstance(store, MetadataStore) and isinstance(store, AuditLog)

    def test_profile_round_trip(self, store: MetadataStore) -> None:
        assert store.stored_profile() is None
        store.record_profile(PROFILE)
        assert store.stored_profile() == PROFILE

    def test_a_first_profile_is_kept_against_a_second_first_one(self, store: MetadataStore) -> None:
        """Two replicas starting on a new store at once: the first record wins, the other reads it back."""
        other = EmbeddingProfile("other", "model-b", PROFILE.dimensions + 1, PROFILE.max_tokens)
        store.record_profile(PROFILE, replace=False)
        store.record_profile(other, replace=False)  # no duplicate-key error, and nothing overwritten
        assert store.stored_profile() == PROFILE
        store.record_profile(other)  # a finished re-embed replaces it
        assert store.stored_profile() == other

    def test_memory_round_trip(self, store: MetadataStore) -> None:
        original = Memory(id="mem_1", content="Ünïcode ✓ 日本", type="preference", confidence=0.25,
                          ts="2025-12-25T10:30:00.123456Z", conversation_id="conv", token_count=7, profile=PROFILE)
        store.add_memory(original, entry("store", "mem_1"))
        assert store.get_memories(["mem_1", "nope"]) == {"mem_1": original}
        assert store.memory_ids() == {"mem_1"}

    def test_list_newest_first_with_type_and_limit(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a", "fact", "2025-01-01T00:00:00Z"), entry("store", "mem_a"))
        store.add_memory(memory("mem_b", "preference", "2025-01-03T00:00:00Z"), entry("store", "mem_b"))
        store.add_memory(memory("mem_c", "fact", "2025-01-02T00:00:00.5Z"), entry("store", "mem_c"))
        assert [m.id for m in store.list_memories(None, 10)] == ["mem_b", "mem_c", "mem_a"]
        assert [m.id for m in store.list_memories("fact", 10)] == ["mem_c", "mem_a"]
        assert [m.id for m in store.list_memories(None, 1)] == ["mem_b"]

    def test_delete_memory(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a"), entry("store", "mem_a"))
        assert store.delete_memory("mem_a", entry("delete", "mem_a")) is True
        assert store.delete_memory("mem_a", entry("delete", "mem_a")) is False
        assert store.get_memories(["mem_a"]) == {}

    def test_replace_memory_keeps_its_id_and_writes_nothing_for_a_missing_one(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a", content="old words"), entry("store", "mem_a"))
        edited = dataclasses.replace(memory("mem_a", kind="decision", content="new words"), confidence=0.75)
        assert store.replace_memory(edited, entry("edit", "mem_a")) is True
        assert store.get_memories(["mem_a"]) == {"mem_a": edited}
        assert store.replace_memory(memory("mem_b"), entry("edit", "mem_b")) is False
        assert store.get_memories(["mem_b"]) == {} and store.memory_ids() == {"mem_a"}
        assert [e.action for e in store.recent(10)][:2] == ["edit", "store"]

    def test_a_memory_supersedes_another_at_once(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a", content="likes tea"), entry("store", "mem_a"))
        coffee = dataclasses.replace(memory("mem_b", ts="2025-02-01T00:00:00Z", content="likes coffee"),
                                     supersedes="mem_a", valid_from="2025-01-15T00:00:00Z")
        assert store.supersede_memory(coffee, entry("store", "mem_b", "mem_a")) is None
        old, new = store.get_memories(["mem_a"])["mem_a"], store.get_memories(["mem_b"])["mem_b"]
        assert (old.valid_to, old.superseded_by) == ("2025-01-15T00:00:00Z", "mem_b") and new == coffee
        assert not holds(old, None) and holds(new, None)
        assert holds(old, epoch("2025-01-10T00:00:00Z")) and not holds(new, epoch("2025-01-10T00:00:00Z"))
        again = dataclasses.replace(memory("mem_c"), supersedes="mem_a")
        assert store.supersede_memory(again, entry("store", "mem_c")) == "superseded"
        assert store.supersede_memory(dataclasses.replace(again, supersedes="mem_x"), entry("store", "mem_c")) == "missing"
        assert store.get_memories(["mem_c"]) == {}

    def test_a_supersession_that_fails_part_way_changes_nothing(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a"), entry("store", "mem_a"))
        store.add_memory(memory("mem_b"), entry("store", "mem_b"))
        clash = dataclasses.replace(memory("mem_b"), supersedes="mem_a")  # its id is taken: the insert fails
        with pytest.raises(Exception):
            store.supersede_memory(clash, entry("store", "mem_b"))
        assert store.get_memories(["mem_a"])["mem_a"].superseded_by is None  # the old one holds still

    def test_turns_replace_by_position(self, store: MetadataStore) -> None:
        store.put_turn(turn("c1", 0, "first"), entry("appended", "c1_turn_0"))
        store.put_turn(turn("c1", 0, "second", "g" * 64), entry("replaced", "c1_turn_0"))
        got = store.get_turn("local", "c1", 0)
        assert got is not None and got.content == "second" and got.content_hash == "g" * 64
        assert store.turn_hashes() == {"c1_turn_0": "g" * 64}
        assert store.get_turn("local", "c1", 1) is None and store.get_turn("bob", "c1", 0) is None

    def test_a_conversation_id_is_each_owners_own(self, store: MetadataStore) -> None:
        """Two owners' turns at one place of one conversation id are two turns: each read, replaced and
        deleted apart, never the other's."""
        store.put_turn(turn("c1", 0, "mine"), entry("appended"))
        store.put_turn(turn("c1", 0, "bob's", owner="bob"), entry("appended"))
        store.put_turn(turn("c1", 1, "bob's next", owner="bob"), entry("appended"))
        bob = turn_id("c1", 0, "bob")
        assert bob != "c1_turn_0" and set(store.turn_hashes()) == {"c1_turn_0", bob, turn_id("c1", 1, "bob")}
        assert store.get_turn("local", "c1", 0).content == "mine" and store.get_turn("bob", "c1", 0).content == "bob's"
        assert [t.content for t in store.recent_turns("local", "c1", 5)] == ["mine"]
        assert [t.content for t in store.recent_turns("bob", "c1", 5)] == ["bob's", "bob's next"]
        store.put_turn(turn("c1", 0, "bob's again", "g" * 64, owner="bob"), entry("replaced"))
        assert store.get_turn("local", "c1", 0).content == "mine"
        assert store.delete_turn("c1_turn_0", entry("expired")) is True
        assert store.get_turn("bob", "c1", 0).content == "bob's again" and store.get_turn("local", "c1", 0) is None

    def test_recent_turns_are_the_last_ones_oldest_first(self, store: MetadataStore) -> None:
        for i in (3, 0, 2, 1, 4):
            store.put_turn(turn("c1", i), entry("appended", f"c1_turn_{i}"))
        store.put_turn(turn("c2", 0), entry("appended", "c2_turn_0"))
        assert [t.turn_index for t in store.recent_turns("local", "c1", 3)] == [2, 3, 4]
        assert [t.turn_index for t in store.recent_turns("local", "c1", 50)] == [0, 1, 2, 3, 4]
        assert store.recent_turns("local", "nobody", 5) == [] and store.recent_turns("bob", "c1", 5) == []
        assert set(store.get_turns(["c1_turn_1", "c2_turn_0", "x"])) == {"c1_turn_1", "c2_turn_0"}

    def test_turns_in_order_page_by_conversation_then_owner_then_index(self, store: MetadataStore) -> None:
        for conv, i, owner in (("c2", 0, "local"), ("c1", 10, "local"), ("c1", 2, "local"), ("c10", 0, "local"),
                               ("c1", 0, "local"), ("c1", 1, "bob"), ("c1", 0, "bob")):
            store.put_turn(turn(conv, i, owner=owner), entry("appended"))
        places = [(t.conversation_id, t.owner, t.turn_index) for t in store.turns_in_order(None, 10)]
        assert places == [("c1", "bob", 0), ("c1", "bob", 1), ("c1", "local", 0), ("c1", "local", 2),
                          ("c1", "local", 10), ("c10", "local", 0), ("c2", "local", 0)]  # index as a number
        assert [(t.conversation_id, t.owner, t.turn_index) for t in store.turns_in_order(("c1", "bob", 1), 2)] == [
            ("c1", "local", 0), ("c1", "local", 2)]
        assert [(t.conversation_id, t.turn_index) for t in store.turns_in_order(("c1", "local", 2), 2)] == [
            ("c1", 10), ("c10", 0)]
        assert store.turns_in_order(("c2", "local", 0), 10) == []

    def test_expired_memories_and_turns_are_listed_soonest_first(self, store: MetadataStore) -> None:
        store.add_memory(dataclasses.replace(memory("mem_a"), expires_epoch=200.0), entry("store", "mem_a"))
        store.add_memory(dataclasses.replace(memory("mem_b"), expires_epoch=100.0), entry("store", "mem_b"))
        store.add_memory(memory("mem_c"), entry("store", "mem_c"))  # never expires
        store.put_turn(dataclasses.replace(turn("c1", 0), expires_epoch=150.0), entry("appended", "c1_turn_0"))
        store.put_turn(turn("c1", 1), entry("appended", "c1_turn_1"))
        assert store.expired_items("memory", 99.0, 10) == []
        assert store.expired_items("memory", 200.0, 10) == ["mem_b", "mem_a"]
        assert store.expired_items("memory", 1e12, 1) == ["mem_b"]
        assert store.expired_items("history", 1e12, 10) == ["c1_turn_0"]

    def test_delete_turn_removes_it_and_only_it(self, store: MetadataStore) -> None:
        for i in range(3):
            store.put_turn(turn("c1", i, f"words {i}"), entry("appended", f"c1_turn_{i}"))
        assert store.delete_turn("c1_turn_1", entry("expired", "c1_turn_1")) is True
        assert store.delete_turn("c1_turn_1", entry("expired", "c1_turn_1")) is False
        assert [t.turn_index for t in store.recent_turns("local", "c1", 10)] == [0, 2]
        assert store.get_turns(["c1_turn_1"]) == {} and set(store.turn_hashes()) == {"c1_turn_0", "c1_turn_2"}
        assert [e.action for e in store.recent(2)] == ["expired", "appended"]

    def test_the_turn_after_a_deleted_one_is_read_alone(self, store: MetadataStore) -> None:
        """Its contextual vectors (read after the deleted turn) become its own: nothing of the deleted
        turn stays findable through its neighbour."""
        from domain.model import VectorRecord

        def vector(tid: str, x: float) -> VectorRecord:
            return VectorRecord(f"{tid}::v1::0", tid, [x, 1.0, 0.0, 0.0], {"version": "v1"})

        store.put_turn(turn("c1", 0, "my bank PIN is 4711"), entry("appended", "c1_turn_0"),
                       {"history": [vector("c1_turn_0", 0.1)], "history_context": [vector("c1_turn_0", 0.1)]})
        store.put_turn(turn("c1", 1, "noted"), entry("appended", "c1_turn_1"),
                       {"history": [vector("c1_turn_1", 0.9)], "history_context": [vector("c1_turn_1", 0.5)]})
        store.delete_turn("c1_turn_0", entry("expired", "c1_turn_0"))
        context = {r.id: r.vector for r in store.stored_vectors("history_context", "", 10)}  # type: ignore[attr-defined]
        assert list(context) == ["c1_turn_1::v1::0"]
        # The SQL stores keep half precision (0.9 reads back as 0.8999); exact values in the fake.
        assert context["c1_turn_1::v1::0"] == pytest.approx([0.9, 1.0, 0.0, 0.0], abs=1e-3)

    def test_every_write_is_audited_without_content(self, store: MetadataStore) -> None:
        store.add_memory(memory("mem_a", content="secret words"), entry("store", "mem_a"))
        store.delete_memory("mem_a", entry("delete", "mem_a"))
        store.put_turn(turn("c1", 0, "more secret words"), entry("appended", "c1_turn_0"))
        log = store.recent(10)
        assert [e.action for e in log] == ["appended", "delete", "store"]
        assert log[1].item_ids == ("mem_a",) and log[1].detail == {"n": 1}
        assert "secret" not in repr(log)

    def test_a_failed_delete_writes_no_audit_row(self, store: MetadataStore) -> None:
        store.delete_memory("mem_missing", entry("delete", "mem_missing"))
        assert store.recent(10) == []

    def test_lists_page_on_from_where_they_stopped(self, store: MetadataStore) -> None:
        for i in range(5):  # two share a timestamp: the id breaks the tie
            store.add_memory(memory(f"mem_{i}", ts=f"2025-01-0{min(i, 3) + 1}T00:00:00Z"), entry("store"))
        first = store.list_memories(None, 2)
        assert [m.id for m in first] == ["mem_4", "mem_3"]
        rest = store.list_memories(None, 10, (first[-1].ts, first[-1].id))
        assert [m.id for m in rest] == ["mem_2", "mem_1", "mem_0"]
        for i in range(6):
            store.put_turn(turn("c1", i), entry("append"))
        assert [t.turn_index for t in store.recent_turns("local", "c1", 2, before=4)] == [2, 3]
        assert [t.turn_index for t in store.recent_turns("local", "c1", 9, before=1)] == [0]
