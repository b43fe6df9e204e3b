"""What every store's vector outbox, ingest jobs and key locks do; subclass as ``Test...`` to run it.

The store (metadata + artifacts) holds each record's vectors beside its row and queues the owner in
the same write; ``claim`` hands queued owners out with the vectors they have now.
"""

from __future__ import annotations

import threading
import time

import pytest

from domain.model import Memory, Turn, VectorRecord
from tests.contract.artifact_store_contract import PROFILE, artifact, entry, job, parts


def vec(record: str, version: str, piece: int = 0, **meta: object) -> VectorRecord:
    return VectorRecord(f"{record}::{version}::{piece}", record, [0.25, -0.5, 1.0, float(piece)],
                        {"version": version, **meta})


def memory(mid: str) -> Memory:
    return Memory(mid, "content", "fact", 0.5, "2025-01-01T00:00:00Z", None, 1, PROFILE)


def turn(conv: str, index: int, digest: str) -> Turn:
    return Turn(f"{conv}_turn_{index}", conv, "user", "hi", index, "2025-01-01T00:00:00Z", 1, digest, PROFILE)


def drain(store) -> list:
    taken = []
    while True:
        with store.claim(100) as items:
            if not items:
                return taken
            taken += items


class OutboxContract:
    """Subclasses override ``store`` with a fresh, empty store (metadata, artifacts, outbox, locks)."""

    @pytest.fixture
    def store(self):
        raise NotImplementedError

    def test_a_write_queues_its_owner_with_its_vectors(self, store) -> None:
        assert store.oldest_queued() is None and store.last_queued() == 0
        store.add_memory(memory("mem_a"), entry("store"), [vec("mem_a", "v1"), vec("mem_a", "v1", 1)])
        assert store.oldest_queued() is not None and store.last_queued() >= store.oldest_queued()
        items = drain(store)
        assert [(i.collection, i.owner) for i in items] == [("memory", "mem_a")]
        got = {r.id: r for r in items[0].records}
        assert sorted(got) == ["mem_a::v1::0", "mem_a::v1::1"]
        assert got["mem_a::v1::1"].vector == pytest.approx([0.25, -0.5, 1.0, 1.0])
        assert got["mem_a::v1::0"].metadata["version"] == "v1" and got["mem_a::v1::0"].record_id == "mem_a"
        assert store.oldest_queued() is None and drain(store) == []

    def test_a_vector_is_found_by_the_text_key_it_was_written_with(self, store) -> None:
        from dataclasses import replace

        keyed = replace(vec("mem_a", "v1"), text_key="ab" * 12)
        store.add_memory(memory("mem_a"), entry("store"), [keyed, vec("mem_a", "v1", 1)])
        assert store.vectors_by_text(["ab" * 12, "cd" * 12]) == {"ab" * 12: pytest.approx([0.25, -0.5, 1.0, 0.0])}
        assert store.vectors_by_text([]) == {}
        [item] = drain(store)
        assert {r.id: r.text_key for r in item.records} == {"mem_a::v1::0": "ab" * 12, "mem_a::v1::1": None}

    def test_queued_vectors_are_scored_until_synced(self, store) -> None:
        near = VectorRecord("mem_a::v1::0", "mem_a", [1.0, 0.0, 0.0, 0.0], {"version": "v1", "type": "fact"})
        far = VectorRecord("mem_b::v1::0", "mem_b", [0.0, 1.0, 0.0, 0.0], {"version": "v1", "type": "note"})
        store.add_memory(memory("mem_a"), entry("store"), [near])
        store.add_memory(memory("mem_b"), entry("store"), [far])
        owners, found = store.nearest_queued("memory", [0.9, 0.1, 0.0, 0.0], 5)
        assert owners == {"mem_a", "mem_b"} and [m.record_id for m in found] == ["mem_a", "mem_b"]
        assert found[0].score == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5, rel=1e-5)
        owners, found = store.nearest_queued("memory", [0.9, 0.1, 0.0, 0.0], 5, {"type": "note"})
        assert [m.id for m in found] == ["mem_b::v1::0"]
        assert store.nearest_queued("history", [1.0, 0.0, 0.0, 0.0], 5) == (set(), [])
        drain(store)
        assert store.nearest_queued("memory", [1.0, 0.0, 0.0, 0.0], 5) == (set(), [])

    def test_similarities_come_from_the_stored_vectors_synced_or_not(self, store) -> None:
        store.add_memory(memory("mem_a"), entry("store"), [
            VectorRecord("mem_a::v1::0", "mem_a", [1.0, 0.0, 0.0, 0.0], {"version": "v1"}),
            VectorRecord("mem_a::v1::1", "mem_a", [0.0, 1.0, 0.0, 0.0], {"version": "v1"})])
        store.add_memory(memory("mem_b"), entry("store"), [
            VectorRecord("mem_b::v1::0", "mem_b", [0.0, 0.0, 1.0, 0.0], {"version": "v1"})])
        query = [0.6, 0.8, 0.0, 0.0]
        expected = {"mem_a": pytest.approx(0.8, rel=1e-5), "mem_b": pytest.approx(0.0, abs=1e-6)}
        assert store.similarities("memory", query, ["mem_a", "mem_b", "mem_none"]) == expected
        drain(store)
        assert store.similarities("memory", query, ["mem_a"]) == {"mem_a": pytest.approx(0.8, rel=1e-5)}
        assert store.similarities("history", query, ["mem_a"]) == {} and store.similarities("memory", query, []) == {}

    def test_a_failed_claim_keeps_its_items(self, store) -> None:
        store.add_memory(memory("mem_a"), entry("store"), [vec("mem_a", "v1")])
        with pytest.raises(RuntimeError):
            with store.claim(10) as items:
                assert len(items) == 1
                raise RuntimeError("index down")
        assert [i.owner for i in drain(store)] == ["mem_a"]

    def test_items_carry_the_state_at_claim_time(self, store) -> None:
        store.put_turn(turn("c", 0, "a" * 64), entry("append"), {"history": [vec("c_turn_0", "a" * 12)]})
        store.put_turn(turn("c", 0, "b" * 64), entry("replace"), {"history": [vec("c_turn_0", "b" * 12)]})
        items = drain(store)
        assert len(items) == 2 and all([r.id for r in i.records] == ["c_turn_0::" + "b" * 12 + "::0"] for i in items)
        store.delete_memory("mem_none", entry("delete"))
        store.add_memory(memory("mem_b"), entry("store"), [vec("mem_b", "v1")])
        store.delete_memory("mem_b", entry("delete"))
        assert [(i.owner, i.records) for i in drain(store)] == [("mem_b", ()), ("mem_b", ())]

    def test_replace_vectors_of_one_collection(self, store) -> None:
        store.put_turn(turn("c", 1, "a" * 64), entry("append"),
                       {"history": [vec("c_turn_1", "a" * 12)], "history_context": [vec("c_turn_1", "a" * 12)]})
        drain(store)
        store.replace_vectors("history_context", "c_turn_1", [vec("c_turn_1", "a" * 12, 0, ctx=True)])
        items = drain(store)
        assert [(i.collection, [r.metadata.get("ctx") for r in i.records]) for i in items] == [
            ("history_context", [True])]
        assert store.count_vectors("history") == 1 and store.count_vectors("history_context") == 1

    def test_pending_vectors_wait_for_the_commit(self, store) -> None:
        a = artifact("art_a", "1" * 64, 2)
        chunks = parts("art_a", 2, "a")
        store.begin_artifact(a, chunks, entry("begin"), job(a))
        records = [vec(c.id, a.version, 0, artifact_id="art_a") for c in chunks]
        assert store.add_pending_vectors(_progress(job(a), 1), "chunk", records[:1])
        assert store.embedded_records("art_a", a.version) == {chunks[0].id}
        assert drain(store) == [] and store.count_vectors("chunk") == 0
        assert store.ingest_job("art_a").done == 1
        assert store.add_pending_vectors(_progress(job(a), 2), "chunk", records[1:])
        store.commit_artifact("art_a", a.version, entry("ingested"))
        assert store.ingest_job("art_a") is None
        items = drain(store)
        by = {i.collection: sorted(r.id for r in i.records) for i in items}
        assert by == {"artifact": [], "chunk": sorted(r.id for r in records)}
        assert [r.id for r in store.stored_vectors("chunk", "", 1)] == [min(r.id for r in records)]
        assert len(store.stored_vectors("chunk", min(r.id for r in records), 10)) == 1

    def test_a_replacement_drops_the_old_versions_vectors(self, store) -> None:
        v1, v2 = artifact("art_a", "1" * 64, 1), artifact("art_a", "2" * 64, 1)
        for a, tag in ((v1, "a"), (v2, "b")):
            chunk = parts("art_a", 1, tag)[0]
            store.begin_artifact(a, [chunk], entry("begin"), job(a))
            store.add_pending_vectors(_progress(job(a), 1), "chunk", [vec(chunk.id, a.version, 0, artifact_id="art_a")])
            store.commit_artifact("art_a", a.version, entry("ingested"))
        items = [i for i in drain(store) if i.collection == "chunk"]
        assert {r.metadata["version"] for i in items for r in i.records} == {v2.version}
        assert store.delete_artifact("art_a", entry("delete")) == 1
        assert [i.records for i in drain(store)] == [(), ()] and store.count_vectors("chunk") == 0

    def test_discard_drops_pending_vectors_and_the_job(self, store) -> None:
        a = artifact("art_a", "1" * 64, 1)
        chunk = parts("art_a", 1, "a")[0]
        store.begin_artifact(a, [chunk], entry("begin"), job(a))
        store.add_pending_vectors(_progress(job(a), 1), "chunk", [vec(chunk.id, a.version, 0, artifact_id="art_a")])
        store.discard_pending("art_a", a.version)
        assert store.ingest_job("art_a") is None and store.embedded_records("art_a", a.version) == set()
        assert store.pending_artifact("art_a", a.version) is None

    def test_job_leases(self, store) -> None:
        a = artifact("art_a", "1" * 64, 2)
        store.begin_artifact(a, parts("art_a", 2, "a"), entry("begin"), job(a, "w1", lease_until=100.0))
        assert store.pending_artifact("art_a", a.version)[0] == a
        assert [j.artifact_id for j in store.open_jobs()] == ["art_a"]
        assert store.claim_job("art_a", a.version, "w2", 200.0, now=50.0) is None  # w1 still holds it
        assert store.claim_job("art_a", a.version, "w1", 150.0, now=50.0).lease_until == 150.0  # its own
        taken = store.claim_job("art_a", a.version, "w2", 300.0, now=160.0)
        assert taken is not None and taken.lease_owner == "w2"
        assert not store.add_pending_vectors(_progress(job(a, "w1"), 1), "chunk", [])  # w1 lost it
        assert store.add_pending_vectors(_progress(job(a, "w2"), 1), "chunk", [])
        assert store.claim_job("art_a", a.version, "w3", 400.0, now=float("inf")) is not None
        store.fail_job("art_a", a.version, "embedding failed")
        failed = store.ingest_job("art_a")
        assert failed.status == "failed" and failed.error == "embedding failed" and store.open_jobs() == []
        assert store.pending_artifact("art_a", a.version) is None

    def test_deleting_an_artifact_under_way_stops_its_job(self, store) -> None:
        a = artifact("art_a", "1" * 64, 1)
        store.begin_artifact(a, parts("art_a", 1, "a"), entry("begin"), job(a))
        assert store.delete_artifact("art_a", entry("delete")) == 0
        assert store.ingest_job("art_a") is None and not store.add_pending_vectors(_progress(job(a), 1), "chunk", [])

    def test_a_switch_takes_the_indexed_vectors_with_the_metadata_the_index_does_not_keep(self, store) -> None:
        store.add_memory(memory("mem_a"), entry("store"), [vec("mem_a", "v1", type="fact", **{"acl:u:alice": True})])
        store.add_memory(memory("mem_b"), entry("store"), [vec("mem_b", "v1", type="fact")])
        assert store.adopt_vectors("old", lambda: iter([])) is None  # written by this release: nothing to take
        # The new profile's index holds mem_a (with only what it filters on) and a record the copy lacks.
        indexed = [VectorRecord("mem_a::v1::0", "mem_a", [9.0, 0.0, 0.0, 0.0], {"type": "fact"}),
                   VectorRecord("mem_c::v2::0", "mem_c", [0.0, 9.0, 0.0, 0.0], {"type": "event"})]
        assert store.adopt_vectors("new", lambda: iter([("memory", indexed)])) == 2
        got = {r.id: r for r in store.stored_vectors("memory", "", 10)}
        assert sorted(got) == ["mem_a::v1::0", "mem_c::v2::0"]  # mem_b's copy went with the old profile
        assert got["mem_a::v1::0"].vector == pytest.approx([9.0, 0.0, 0.0, 0.0])
        assert got["mem_a::v1::0"].metadata.items() >= {"version": "v1", "type": "fact", "acl:u:alice": True}.items()
        assert got["mem_c::v2::0"].metadata["type"] == "event" and "acl:u:alice" not in got["mem_c::v2::0"].metadata
        assert store.adopt_vectors("new", lambda: iter([])) is None

    def test_key_locks_exclude_each_other(self, store) -> None:
        inside: list[str] = []
        overlaps: list[bool] = []

        def worker(name: str) -> None:
            with store.hold("turn-1"):
                overlaps.append(bool(inside))
                inside.append(name)
                time.sleep(0.02)
                inside.remove(name)

        threads = [threading.Thread(target=worker, args=(str(i),)) for i in range(4)]
        for t in threads:
            t.start()
        with store.hold("another key"):  # other keys are not held up
            pass
        for t in threads:
            t.join()
        assert overlaps == [False] * 4


    def test_adopted_memory_vectors_carry_the_intervals_their_rows_say(self, store) -> None:
        """The new profile's index may have been written before a supersession (issue 41.2): the ended
        version's adopted vectors say when it ended, as its row does, and go to the index again."""
        import dataclasses

        from domain.access.rules import NEVER
        from domain.validation import epoch

        store.add_memory(memory("mem_a"), entry("store"), [vec("mem_a", "v1", type="fact")])
        newer = dataclasses.replace(memory("mem_b"), supersedes="mem_a", valid_from="2025-03-01T00:00:00Z")
        assert store.supersede_memory(newer, entry("store"), [vec("mem_b", "v1", type="fact")]) is None
        assert store.adopt_vectors("old", lambda: iter([])) is None
        while store.oldest_queued() is not None:
            with store.claim(100):
                pass
        indexed = [VectorRecord("mem_a::v1::0", "mem_a", [9.0, 0.0, 0.0, 0.0],
                                {"type": "fact", "valid_from_epoch": 0.0, "valid_to_epoch": NEVER})]
        assert store.adopt_vectors("new", lambda: iter([("memory", indexed)])) == 1
        got = {r.id: r for r in store.stored_vectors("memory", "", 10)}
        assert got["mem_a::v1::0"].metadata["valid_to_epoch"] == epoch("2025-03-01T00:00:00Z")
        with store.claim(100) as items:
            assert "mem_a" in {item.owner for item in items}


def _progress(j, done: int):
    from dataclasses import replace

    return replace(j, done=done)
