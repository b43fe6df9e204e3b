"""The vector index follows the store (SyncVectors, RebuildVectors) on the in-memory fakes."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest

from domain.errors import StorageError
from domain.ids import artifact_of, version_of
from domain.model import AuditEntry, ChunkSpec, VectorRecord
from domain.artifacts.input import IngestRequest
from domain.history.usecases import CONTEXT_COLLECTION, AppendTurn, AppendTurnRequest
from domain.artifacts.ingest import IngestArtifact
from domain.memories.usecases import DeleteMemory, StoreMemory, StoreMemoryRequest
from domain.search.usecases import HybridSearch, SearchMemories, SearchMemoriesRequest, SearchRequest
from domain.upkeep.vector_sync import COLLECTIONS, RebuildVectors, SyncVectors
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher, synced, syncer

LONG = " ".join(f"word{i}" for i in range(300)) + " the launch code is zebra"


def remember(w, text: str):
    return StoreMemory(w.embedder, w.store, w.split, w.tokenizer)(StoreMemoryRequest(text, "fact", 0.9))


def append(w, text: str, index: int = 0):
    return AppendTurn(w.embedder, w.store, w.store, w.split, w.tokenizer)(AppendTurnRequest("c", "user", text, index))


def ingest(w, **kw):
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, catalog(TokenWindowChunker()), w.tokenizer,
                          ChunkSpec(30, 5, 30), w.split, **kw)


def index_of(w, collection: str) -> dict[str, str]:
    """The vectors the index holds for a collection (a vector id names its record and version)."""
    return w.vectors.all_vectors(collection)


def in_step(w, collection: str) -> bool:
    """The index holds exactly the collection's committed vectors in the store."""
    stored = w.store.stored_vectors(collection, "", 100_000)
    return index_of(w, collection) == {r.id: r.record_id for r in stored}


class Gated:
    """The world's index, whose first upsert waits until the test lets it go (a worker mid-batch)."""

    def __init__(self, inner) -> None:
        self.inner, self.entered, self.release = inner, threading.Event(), threading.Event()

    def upsert(self, collection, records) -> None:
        self.entered.set()
        assert self.release.wait(10)
        self.inner.upsert(collection, records)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class Replay:
    """An outbox that hands out the same, already synced, items once more (at-least-once delivery)."""

    def __init__(self, items) -> None:
        self.items = items

    @contextmanager
    def claim(self, limit: int):
        items, self.items = self.items[:limit], self.items[limit:]
        yield items


def test_a_write_reaches_the_index_only_when_synced(world) -> None:
    memory = remember(world, "the launch code is zebra")
    assert world.store.count_vectors("memory") == 1  # stored with the row
    assert world.vectors.count("memory") == 0 and world.store.oldest_queued() is not None
    assert syncer(world).step() == 1
    assert world.store.oldest_queued() is None and set(world.vectors.all_vectors("memory").values()) == {memory.id}
    assert syncer(world).step() == 0


def test_drain_syncs_everything_queued(world) -> None:
    for i in range(5):
        remember(world, f"fact number {i}")
    append(world, "hello there", 0)
    append(world, "general kenobi", 1)
    done = SyncVectors(world.store, world.vectors, batch=2).drain()
    assert done == 5 + 2 * 2 and world.store.oldest_queued() is None  # a turn has vectors in two collections
    assert all(in_step(world, c) for c in ("memory", "history", CONTEXT_COLLECTION))


def test_catch_up_waits_for_work_another_worker_holds(world) -> None:
    first = remember(world, "first fact")
    gated = Gated(world.vectors)
    worker = threading.Thread(target=SyncVectors(world.store, gated).step)
    worker.start()
    assert gated.entered.wait(10)  # the worker holds the first item, mid-batch
    second = remember(world, "second fact")
    caught_up = threading.Event()
    reader = threading.Thread(target=lambda: (syncer(world).catch_up(timeout=10), caught_up.set()))
    reader.start()
    assert not caught_up.wait(0.3)  # the first item is not in the index yet: a search must wait
    gated.release.set()
    worker.join(10)
    reader.join(10)
    assert caught_up.is_set() and world.store.oldest_queued() is None
    assert set(world.vectors.all_vectors("memory").values()) == {first.id, second.id}


def test_catch_up_returns_at_once_when_nothing_is_queued(world) -> None:
    syncer(world).catch_up(timeout=0)
    remember(world, "a fact")
    syncer(world).catch_up(timeout=0)
    assert world.store.oldest_queued() is None and in_step(world, "memory")


def test_replaying_items_changes_nothing(world) -> None:
    remember(world, "a fact")
    append(world, "a turn", 0)
    with world.store.claim(100) as items:
        pass  # read and done: the items leave the queue, the index is not touched yet
    assert world.store.oldest_queued() is None and world.vectors.count("memory") == 0
    assert SyncVectors(Replay(items), world.vectors).step() == len(items)
    before = {c: index_of(world, c) for c in COLLECTIONS}
    assert all(in_step(world, c) for c in COLLECTIONS)
    assert SyncVectors(Replay(items * 2), world.vectors).drain() == 2 * len(items)
    assert {c: index_of(world, c) for c in COLLECTIONS} == before


def test_a_batch_that_fails_half_way_stays_queued_and_a_retry_converges(world, monkeypatch) -> None:
    append(world, " ".join(["old"] * 120), 0)
    synced(world)
    append(world, "brand new", 0)
    queued = list(world.store.queued)

    def down(*_):
        raise StorageError("chroma down")
    monkeypatch.setattr(world.vectors, "delete_vectors", down)  # the upsert went through, the delete did not
    with pytest.raises(StorageError):
        syncer(world).step()
    assert world.store.queued == queued
    monkeypatch.undo()
    synced(world)
    assert in_step(world, "history") and in_step(world, CONTEXT_COLLECTION)


def test_items_of_one_owner_out_of_order_converge_to_what_the_store_holds(world) -> None:
    append(world, "version one", 0)
    append(world, "version two", 0)
    SyncVectors(world.store, world.vectors, batch=1).drain()
    digest = world.store.get_turn("local", "c", 0).content_hash[:12]
    for collection in ("history", CONTEXT_COLLECTION):
        assert {version_of(vid) for vid in world.vectors.all_vectors(collection)} == {digest}


def test_an_item_read_before_a_change_is_put_right_by_the_change_s_own_item(world) -> None:
    one = append(world, "version one", 0).turn
    gated = Gated(world.vectors)
    worker = threading.Thread(target=SyncVectors(world.store, gated).step)
    worker.start()
    assert gated.entered.wait(10)  # claimed with version one's vectors
    two = append(world, "version two", 0).turn  # committed while that item is being synced
    gated.release.set()
    worker.join(10)
    assert {version_of(v) for v in world.vectors.all_vectors("history")} == {one.content_hash[:12]}  # stale...
    assert world.store.oldest_queued() is not None  # ...but version two's item is queued
    synced(world)
    for collection in ("history", CONTEXT_COLLECTION):
        assert {version_of(v) for v in world.vectors.all_vectors(collection)} == {two.content_hash[:12]}
        assert in_step(world, collection)


def test_a_deleted_memory_leaves_the_index_on_sync(world) -> None:
    keep = remember(world, "keep this")
    forget = remember(world, " ".join(["forget"] * 120))
    assert len(synced(world).vectors.vectors_of("memory", [forget.id])[forget.id]) > 1
    DeleteMemory(world.store)(forget.id)
    assert forget.id in world.vectors.all_vectors("memory").values()  # until the sync
    assert set(synced(world).vectors.all_vectors("memory").values()) == {keep.id}
    assert in_step(world, "memory")


def test_a_replaced_turn_keeps_exactly_its_current_vectors_in_both_collections(world) -> None:
    append(world, "Where did you go?", 0)
    append(world, " ".join(["long"] * 120), 1)
    synced(world)
    turn = append(world, "The lake.", 1).turn
    synced(world)
    for collection in ("history", CONTEXT_COLLECTION):
        mine = [vid for vid, owner in world.vectors.all_vectors(collection).items() if owner == turn.id]
        assert len(mine) == 1 and version_of(mine[0]) == turn.content_hash[:12]
        assert in_step(world, collection)


AUDIT = AuditEntry("deleted", "artifact", ("d1",), "test", "2025-01-01T00:00:00Z")


class Asked:
    """The world's index, noting for which owners it was asked what it holds."""

    def __init__(self, inner) -> None:
        self.inner, self.owners = inner, []

    def vector_ids(self, collection, where):
        self.owners += [owner for condition in where.values() for owner in condition["$in"]]
        return self.inner.vector_ids(collection, where)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_only_an_owner_that_may_have_vectors_to_delete_is_looked_up_in_the_index(aworld) -> None:
    asked = Asked(aworld.vectors)
    sync = SyncVectors(aworld.store, asked)
    first = ingest(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    sync.drain()
    assert asked.owners == [] and in_step(aworld, "chunk")  # new: nothing of its in the index yet
    ingest(aworld)(IngestRequest("doc", "drive", LONG + " and the spare key is under the mat", source_id="d1"))
    sync.drain()
    assert set(asked.owners) == {first.artifact.id} and in_step(aworld, "chunk")  # the old version left
    aworld.artifacts.delete_artifact(first.artifact.id, AUDIT)  # deleted, then made again before a sync
    again = ingest(aworld)(IngestRequest("doc", "drive", "a short text now", source_id="d1"))
    asked.owners.clear()
    sync.drain()
    assert again.artifact.id == first.artifact.id and set(asked.owners) == {first.artifact.id}
    assert in_step(aworld, "chunk") and in_step(aworld, "artifact")


def test_rebuild_restores_every_collection_from_stored_vectors_without_embedding(aworld) -> None:
    memory = remember(aworld, "the launch code is zebra")
    append(aworld, "Where did you go?", 0)
    append(aworld, "The lake.", 1)
    ingest(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    ingest(aworld)(IngestRequest("note", "manual", "buy oat milk"))

    class Crash(BaseException):
        pass

    def crash(point: str) -> None:
        if point == "vectors_0":
            raise Crash(point)
    with pytest.raises(Crash):  # an ingest under way: its pending vectors are not the index's
        ingest(aworld, checkpoint=crash)(IngestRequest("doc", "drive", LONG + " more", source_id="d2"))
    [job] = aworld.artifacts.open_jobs()
    synced(aworld)
    aworld.vectors.upsert("memory", [VectorRecord("mem_gone::abc::0", "mem_gone", [1.0] + [0.0] * 63)])
    aworld.vectors.drop("chunk")  # a lost collection
    calls = len(aworld.embedder.calls)
    counts = RebuildVectors(aworld.store, aworld.vectors, page=3)()
    assert len(aworld.embedder.calls) == calls
    assert counts == {c: aworld.store.count_vectors(c) for c in COLLECTIONS}
    assert counts["memory"] == 1 and counts["history"] == counts[CONTEXT_COLLECTION] == 2
    assert counts["artifact"] == 1 and counts["chunk"] > 3
    assert all(in_step(aworld, c) for c in COLLECTIONS)  # the stray vector is gone, the pending ones absent
    assert job.artifact_id not in {artifact_of(owner) for owner in index_of(aworld, "chunk").values()}
    hits = SearchMemories(searcher(aworld))(SearchMemoriesRequest("launch code zebra", 5, mode="vector"))
    assert [h.id for h in hits] == [memory.id]
    found = HybridSearch(searcher(aworld), aworld.artifacts)(SearchRequest("launch code zebra", 3, mode="vector"))
    assert found.hits and found.hits[0].type == "chunk" and "zebra" in found.hits[0].content


def test_a_search_finds_what_the_index_does_not_hold_yet_without_waiting(world) -> None:
    """The ranker scores queued owners' stored vectors itself and sets their stale index vectors aside."""
    from domain.search.retrieval import RetrievalConfig
    from domain.memories.usecases import StoreMemory, StoreMemoryRequest
    from domain.search.ranking import Ranker
    from domain.search.retrieve import Retriever
    from domain.search.usecases import SearchMemories, SearchMemoriesRequest

    ranker = Ranker(world.vectors, world.store, world.store, world.store, world.policies, outbox=world.store)
    search = SearchMemories(Retriever(world.embedder, ranker, RetrievalConfig()))  # no catch-up: never waits
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer)
    synced_memory = store(StoreMemoryRequest("the walrus sings sea shanties", "fact", 0.9))
    syncer(world).drain()
    queued = store(StoreMemoryRequest("the narwhal plays the oboe", "fact", 0.9))
    assert world.vectors.count("memory") == 1 and world.store.oldest_queued() is not None
    found = search(SearchMemoriesRequest("narwhal oboe", 2, mode="vector"))
    assert [h.id for h in found][0] == queued.id
    assert {h.id for h in search(SearchMemoriesRequest("walrus shanties", 2, mode="vector"))} >= {synced_memory.id}
    # a stale vector of a queued owner in the index is set aside: only the stored one speaks for it
    world.vectors.upsert("memory", [VectorRecord(f"{queued.id}::{'0' * 12}::0", queued.id,
                                                 world.embedder.embed_query("walrus shanties"))])
    top = search(SearchMemoriesRequest("walrus shanties", 1, mode="vector"))
    assert [h.id for h in top] == [synced_memory.id]
