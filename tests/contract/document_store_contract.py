"""The behaviour every DocumentStore shares: numbered versions of items, canonical documents by key,
the newest items filtered and ordered, and idempotency keys (claimed once, finished, released, taken
over when stale), per project, durable and safe under concurrent callers.

Subclass DocumentStoreContract as ``Test...`` and override the ``store`` fixture with a fresh, empty
store; override ``reopen`` with a callable giving another store object on the same database (the
durability tests skip without one). Set ``replicas = True`` when two store objects on one database
may write at once (PostgreSQL: two replicas).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from domain.ports.documents import DocumentStore, ItemVersion, KeyedResult


def version(item_id: str, content: str = "text", *, project: str = "p1", ts: str = "2026-01-01T00:00:00Z",
            **fields: Any) -> ItemVersion:
    return ItemVersion(project=project, item_id=item_id, version_num=fields.pop("version_num", 0),
                       kind=fields.pop("kind", "note"), title=fields.pop("title", f"Title of {item_id}"),
                       content=content, content_hash=f"h-{content}", created_at=ts, **fields)


def ids(versions: list[ItemVersion]) -> list[str]:
    return [v.item_id for v in versions]


def at(day: int, hour: int = 0) -> str:
    return f"2026-01-{day:02d}T{hour:02d}:00:00Z"


def together(count: int, action: Callable[[int], Any]) -> list[Any]:
    """``action(i)`` on ``count`` threads released at once; their results (an exception fails the test)."""
    barrier, results, errors = threading.Barrier(count), [None] * count, []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = action(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return results


class DocumentStoreContract:
    replicas = False

    @pytest.fixture
    def store(self) -> DocumentStore:
        raise NotImplementedError

    @pytest.fixture
    def reopen(self) -> Callable[[], DocumentStore] | None:
        return None

    # --- versions ------------------------------------------------------------------------------

    def test_versions_are_numbered_from_one_per_item(self, store) -> None:
        assert isinstance(store, DocumentStore)
        got = [store.add_version(version("it_a", f"v{n}", version_num=99)) for n in range(3)]
        assert [v.version_num for v in got] == [1, 2, 3]
        assert got[0] == version("it_a", "v0", version_num=1)
        assert store.add_version(version("it_b", "other", version_num=7)).version_num == 1
        assert store.add_version(version("it_a", "v3")).version_num == 4
        assert [v.version_num for v in store.item_versions("p1", "it_b")] == [1]

    def test_every_version_is_kept_and_read_by_number(self, store) -> None:
        first = version("it_a", "first", ts=at(1), kind="spec", canonical_key="app-spec", doc_class="feature_spec",
                        tags=("auth", "東京"), pinned=True, session_id="s-1", meta={"n": [1, {"x": "é"}]})
        second = replace(first, content="second", content_hash="h-second", created_at=at(2), pinned=False,
                         status="archived", tags=(), session_id=None, meta={})
        one, two = store.add_version(first), store.add_version(second)
        assert one == replace(first, version_num=1) and two == replace(second, version_num=2)
        assert store.item_version("p1", "it_a", 1) == one
        assert store.item_version("p1", "it_a", 2) == two
        assert store.item_version("p1", "it_a") == two  # the newest
        assert store.item_version("p1", "it_a", 3) is None
        assert store.item_version("p1", "it_missing") is None
        assert store.item_versions("p1", "it_a") == [one, two]
        assert store.item_versions("p1", "it_missing") == []
        read = store.item_version("p1", "it_a", 1)
        assert read.tags == ("auth", "東京") and read.meta == {"n": [1, {"x": "é"}]} and read.pinned is True
        read.meta["n"].append(2)  # a read is a copy
        assert store.item_version("p1", "it_a", 1).meta == {"n": [1, {"x": "é"}]}

    def test_versions_in_order_page_by_project_item_then_number(self, store) -> None:
        for project, item in (("p2", "it_a"), ("p1", "it_b"), ("p1", "it_a"), ("p1", "it_b"), ("p10", "it_a")):
            store.add_version(version(item, f"{project}-{item}", project=project))
        places = [(v.project, v.item_id, v.version_num) for v in store.versions_in_order(None, 10)]
        assert places == [("p1", "it_a", 1), ("p1", "it_b", 1), ("p1", "it_b", 2), ("p10", "it_a", 1),
                          ("p2", "it_a", 1)]
        assert [(v.project, v.item_id, v.version_num) for v in store.versions_in_order(("p1", "it_b", 1), 2)] == [
            ("p1", "it_b", 2), ("p10", "it_a", 1)]
        assert store.versions_in_order(("p2", "it_a", 1), 10) == []

    def test_projects_never_mix(self, store) -> None:
        store.add_version(version("it_a", "mine", project="p1", canonical_key="spec"))
        store.add_version(version("it_a", "theirs", project="p2", canonical_key="spec"))
        store.add_version(version("it_b", "theirs too", project="p2", canonical_key="plan"))
        assert store.add_version(version("it_a", "mine again", project="p1")).version_num == 2
        assert store.item_version("p1", "it_a", 1).content == "mine"
        assert store.item_version("p2", "it_a").content == "theirs"
        assert [v.content for v in store.item_versions("p2", "it_a")] == ["theirs"]
        assert ids(store.latest_items("p1")) == ["it_a"] and sorted(ids(store.latest_items("p2"))) == ["it_a", "it_b"]
        assert store.canonical_item("p1", "plan") is None and store.canonical_item("p2", "plan") == "it_b"
        assert store.latest_items("p3") == []

    def test_canonical_item_by_key(self, store) -> None:
        store.add_version(version("doc_1", "spec v1", canonical_key="app-spec", kind="spec"))
        store.add_version(version("doc_1", "spec v2", canonical_key="app-spec", kind="spec"))
        store.add_version(version("doc_2", "plan", canonical_key="app-plan", kind="plan"))
        store.add_version(version("it_3", "no key"))
        assert store.canonical_item("p1", "app-spec") == "doc_1"
        assert store.canonical_item("p1", "app-plan") == "doc_2"
        assert store.canonical_item("p1", "nothing") is None
        assert store.canonical_item("p2", "app-spec") is None
        other = version("doc_9", "same key, another project", project="p2", canonical_key="app-spec")
        store.add_version(other)
        assert store.canonical_item("p2", "app-spec") == "doc_9" and store.canonical_item("p1", "app-spec") == "doc_1"

    # --- latest_items --------------------------------------------------------------------------

    def test_latest_items_gives_each_items_newest_version(self, store) -> None:
        store.add_version(version("it_a", "a1", ts=at(1)))
        store.add_version(version("it_b", "b1", ts=at(2)))
        store.add_version(version("it_a", "a2", ts=at(3)))
        latest = store.latest_items("p1")
        assert [(v.item_id, v.version_num, v.content) for v in latest] == [("it_a", 2, "a2"), ("it_b", 1, "b1")]

    def test_latest_items_filters(self, store) -> None:
        store.add_version(version("spec", "s", kind="spec", ts=at(1)))
        store.add_version(version("dec", "d", kind="decision", ts=at(2), session_id="s-1"))
        store.add_version(version("fix", "f", kind="troubleshooting", ts=at(5), session_id="s-2"))
        store.add_version(version("old", "o", kind="note", ts=at(3), pinned=True))
        store.add_version(version("gone", "g1", kind="note", ts=at(4)))
        store.add_version(version("gone", "g2", kind="note", ts=at(6), status="archived"))
        store.add_version(version("back", "b1", kind="note", ts=at(1), status="archived"))
        store.add_version(version("back", "b2", kind="note", ts=at(7)))  # the newest version decides
        assert ids(store.latest_items("p1")) == ["old", "back", "fix", "dec", "spec"]
        assert ids(store.latest_items("p1", include_archived=True)) == ["old", "back", "gone", "fix", "dec", "spec"]
        assert ids(store.latest_items("p1", kinds=["spec", "decision"])) == ["dec", "spec"]
        assert ids(store.latest_items("p1", kinds=["troubleshooting"])) == ["fix"]
        assert ids(store.latest_items("p1", kinds=["note"], include_archived=True)) == ["old", "back", "gone"]
        assert ids(store.latest_items("p1", kinds=["plan"])) == []
        assert ids(store.latest_items("p1", pinned_only=True)) == ["old"]
        assert ids(store.latest_items("p1", since=at(5))) == ["back", "fix"]  # since is inclusive
        assert ids(store.latest_items("p1", since=at(5), include_archived=True)) == ["back", "gone", "fix"]
        assert ids(store.latest_items("p1", since=at(8))) == []
        assert ids(store.latest_items("p1", session_id="s-1")) == ["dec"]
        assert ids(store.latest_items("p1", session_id="s-9")) == []
        assert ids(store.latest_items("p1", kinds=["decision", "troubleshooting"], since=at(2), session_id="s-2")) == [
            "fix"]

    def test_latest_items_order_pinned_then_newest_then_id(self, store) -> None:
        store.add_version(version("it_c", ts=at(1, 0)))
        store.add_version(version("it_b", ts=at(1, 5)))
        store.add_version(version("it_a", ts=at(1, 5)))
        store.add_version(version("it_p_old", ts=at(1, 1), pinned=True))
        store.add_version(version("it_p_new", ts=at(1, 9), pinned=True))
        store.add_version(version("it_z", ts="2026-01-01T02:00:00+00:00"))
        assert ids(store.latest_items("p1")) == ["it_p_new", "it_p_old", "it_a", "it_b", "it_z", "it_c"]
        store.add_version(version("it_c", "now pinned", ts=at(1, 0), pinned=True))
        assert ids(store.latest_items("p1"))[:3] == ["it_p_new", "it_p_old", "it_c"]

    def test_latest_items_honours_the_limit(self, store) -> None:
        for i in range(7):
            store.add_version(version(f"it_{i}", ts=at(1 + i)))
        assert ids(store.latest_items("p1", limit=3)) == ["it_6", "it_5", "it_4"]
        assert len(store.latest_items("p1", limit=1)) == 1
        assert len(store.latest_items("p1", limit=100)) == 7
        assert len(store.latest_items("p1")) == 7

    def test_versions_wait_for_their_projection_until_marked(self, store) -> None:
        from domain.validation import epoch
        store.add_version(version("it_a", "a1", ts=at(1)))
        store.add_version(version("it_a", "a2", ts=at(2)))
        store.add_version(version("it_b", "b1", ts=at(3), project="p2"))
        store.add_version(version("it_c", "c1", ts=at(5)))
        pending = store.unprojected(epoch(at(4)))
        assert [(v.project, v.item_id, v.version_num) for v in pending] == [
            ("p1", "it_a", 1), ("p1", "it_a", 2), ("p2", "it_b", 1)]  # oldest first, none newer than asked
        assert pending[1].content == "a2" and store.unprojected(epoch(at(4)), limit=1) == pending[:1]
        store.mark_projected("p1", "it_a", 2)  # the newest version written: the older one needs nothing
        store.mark_projected("p1", "it_b", 1)  # another project's item of that id: untouched
        assert [(v.project, v.item_id) for v in store.unprojected(epoch(at(9)))] == [("p2", "it_b"), ("p1", "it_c")]
        store.add_version(version("it_a", "a3", ts=at(6)))
        assert [(v.item_id, v.version_num) for v in store.unprojected(epoch(at(9)))] == [
            ("it_b", 1), ("it_c", 1), ("it_a", 3)]

    # --- idempotency keys ----------------------------------------------------------------------

    def test_a_key_is_claimed_once_then_holds_its_result(self, store) -> None:
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        held = store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1001.0)
        assert held == KeyedResult("k-1", "memory_commit", "hash-1", None, 1000.0)  # still under way
        result = {"items": [{"id": "doc_1", "versionNum": 1}], "note": "東京"}
        store.finish_key("p1", "k-1", result)
        done = store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1002.0)
        assert done == KeyedResult("k-1", "memory_commit", "hash-1", result, 1000.0)
        done.result["items"].clear()  # a read is a copy
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1003.0).result == result

    def test_another_payload_or_tool_sees_the_holder(self, store) -> None:
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        store.finish_key("p1", "k-1", {"ok": True})
        other = store.claim_key("p1", "k-1", "memory_commit", "hash-2", 1001.0)
        assert other is not None and other.payload_hash == "hash-1" and other.result == {"ok": True}
        tool = store.claim_key("p1", "k-1", "canonical_upsert", "hash-1", 1001.0)
        assert tool is not None and tool.tool == "memory_commit"
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1002.0).result == {"ok": True}

    def test_release_lets_a_new_claim_succeed(self, store) -> None:
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        store.release_key("p1", "k-1")
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-2", 1001.0) is None
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-2", 1002.0).payload_hash == "hash-2"
        store.release_key("p1", "k-unknown")  # nothing to give up: no error

    def test_a_finished_key_is_not_released(self, store) -> None:
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        store.finish_key("p1", "k-1", {"ok": 1})
        store.release_key("p1", "k-1")
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1001.0).result == {"ok": 1}

    def test_keys_are_per_project(self, store) -> None:
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        assert store.claim_key("p2", "k-1", "memory_commit", "hash-9", 1000.0) is None
        store.finish_key("p2", "k-1", {"project": "p2"})
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1001.0).result is None
        assert store.claim_key("p2", "k-1", "memory_commit", "hash-9", 1001.0).result == {"project": "p2"}
        store.release_key("p1", "k-1")
        assert store.claim_key("p2", "k-1", "memory_commit", "hash-9", 1002.0).result == {"project": "p2"}

    def test_a_stale_claim_can_be_taken_over(self, store) -> None:
        lease = store.claim_lease
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0 + lease - 1).claimed_at == 1000.0
        later = 1000.0 + lease + 1
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-2", later) is None  # its caller died
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", later + 1) == KeyedResult(
            "k-1", "memory_commit", "hash-2", None, later)
        store.finish_key("p1", "k-1", {"ok": True})
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-2", later + 100 * lease).result == {"ok": True}

    def test_a_renewed_claim_is_not_stale_and_keeps_its_fence(self, store) -> None:
        lease = store.claim_lease
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0) is None
        assert store.renew_key("p1", "k-1", 1000.0, 1000.0 + lease - 1)
        held = store.claim_key("p1", "k-1", "memory_commit", "hash-2", 1000.0 + lease + 1)
        assert held is not None and held.claimed_at == 1000.0 + lease - 1  # alive: not taken over
        assert not store.renew_key("p1", "k-1", 1000.0, 1000.0 + lease)  # the old token no longer holds it
        assert not store.finish_key("p1", "k-1", {"stale": True}, 1000.0)
        assert store.finish_key("p1", "k-1", {"ok": True}, 1000.0 + lease - 1)
        assert not store.renew_key("p1", "k-1", 1000.0 + lease - 1, 1000.0 + lease)  # finished: nothing to renew
        assert not store.renew_key("p1", "k-unknown", 1000.0, 1001.0)
        assert store.claim_key("p1", "k-1", "memory_commit", "hash-1", 1000.0 + 9 * lease).result == {"ok": True}

    # --- durability ----------------------------------------------------------------------------

    def test_versions_and_keys_survive_a_new_store_object(self, store, reopen) -> None:
        if reopen is None:
            pytest.skip("the fake keeps nothing beyond its object")
        store.add_version(version("doc_1", "one", canonical_key="app-spec", tags=("a",), meta={"m": 1}))
        store.add_version(version("doc_1", "two", canonical_key="app-spec"))
        assert store.claim_key("p1", "k-done", "memory_commit", "hash-1", 1000.0) is None
        store.finish_key("p1", "k-done", {"items": ["doc_1"]})
        assert store.claim_key("p1", "k-open", "memory_commit", "hash-2", 1000.0) is None
        again = reopen()
        try:
            assert again.item_versions("p1", "doc_1") == store.item_versions("p1", "doc_1")
            assert [v.content for v in again.item_versions("p1", "doc_1")] == ["one", "two"]
            assert again.canonical_item("p1", "app-spec") == "doc_1"
            assert again.claim_key("p1", "k-done", "memory_commit", "hash-1", 1001.0).result == {"items": ["doc_1"]}
            assert again.claim_key("p1", "k-open", "memory_commit", "hash-2", 1001.0).result is None
            assert again.add_version(version("doc_1", "three")).version_num == 3
        finally:
            again.close()

    # --- concurrency ---------------------------------------------------------------------------

    def test_concurrent_appends_get_distinct_consecutive_numbers(self, store) -> None:
        got = together(8, lambda i: store.add_version(version("it_hot", f"v{i}")).version_num)
        assert sorted(got) == list(range(1, 9))
        versions = store.item_versions("p1", "it_hot")
        assert [v.version_num for v in versions] == list(range(1, 9))
        assert {v.content: v.version_num for v in versions} == {f"v{i}": got[i] for i in range(8)}

    def test_concurrent_claims_of_one_key_let_exactly_one_through(self, store) -> None:
        got = together(8, lambda i: store.claim_key("p1", "k-hot", "memory_commit", "hash-1", 1000.0 + i / 100))
        winners = [i for i, held in enumerate(got) if held is None]
        assert len(winners) == 1
        assert all(held.result is None and held.claimed_at == 1000.0 + winners[0] / 100
                   for held in got if held is not None)

    def test_two_replicas_append_and_claim_at_once(self, store, reopen) -> None:
        if not self.replicas or reopen is None:
            pytest.skip("only one writer per database here")
        other = reopen()
        try:
            stores = [store, other]
            got = together(8, lambda i: stores[i % 2].add_version(version("it_hot", f"v{i}")).version_num)
            assert sorted(got) == list(range(1, 9))
            held = together(8, lambda i: stores[i % 2].claim_key("p1", "k-hot", "memory_commit", "h", 1000.0 + i))
            assert sum(h is None for h in held) == 1
        finally:
            other.close()
