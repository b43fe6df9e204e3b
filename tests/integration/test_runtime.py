"""The container wired to real embedded Chroma and SQLite files: persistence, profiles, repair."""

from __future__ import annotations

from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.memory.basics import HashEmbedder
from config.settings import Settings
from domain.errors import ConfigurationError
from domain.model import VectorRecord
from domain.history.usecases import AppendTurnRequest
from domain.memories.usecases import StoreMemoryRequest
from domain.search.usecases import SearchMemoriesRequest
from entrypoints.runtime import Runtime


def runtime(data_dir: Path, embedder=None) -> Runtime:
    rt = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False))
    rt.app.adapters.embedder.override(providers.Object(embedder or HashEmbedder(dimensions=32, max_tokens=64)))
    rt.start()
    rt.check_store()
    return rt


def test_everything_survives_a_restart(tmp_path: Path) -> None:
    first = runtime(tmp_path)
    memory = first.app.use_cases.store_memory()(StoreMemoryRequest("likes green tea", "preference", 0.7))
    first.app.use_cases.append_turn()(AppendTurnRequest("c1", "user", "hello there", 0))
    first.shutdown()

    second = runtime(tmp_path)
    second.ensure_ready()
    hits = second.app.use_cases.search_memories()(SearchMemoriesRequest("green tea", 1))
    assert [h.id for h in hits] == [memory.id]
    assert [t.content for t in second.app.use_cases.get_history()("c1")] == ["hello there"]
    assert (tmp_path / "memtrove.sqlite3").exists() and (tmp_path / "chroma").is_dir()
    second.shutdown()


def test_a_different_embedder_on_the_same_store_is_refused(tmp_path: Path) -> None:
    runtime(tmp_path, HashEmbedder(dimensions=32)).shutdown()
    with pytest.raises(ConfigurationError, match="fake/hash-bag-of-words/32d"):
        runtime(tmp_path, HashEmbedder(dimensions=48))


def test_profiles_never_share_a_collection(tmp_path: Path) -> None:
    small = runtime(tmp_path / "a", HashEmbedder(dimensions=32)).app.adapters.vectors()
    large = runtime(tmp_path / "b", HashEmbedder(dimensions=48)).app.adapters.vectors()
    assert small.collection_name("memory") != large.collection_name("memory")


def test_work_committed_before_a_crash_reaches_the_index_from_the_outbox(tmp_path: Path) -> None:
    first = runtime(tmp_path)  # never made ready: its vector worker never ran, like a kill after the commit
    kept = first.app.use_cases.store_memory()(StoreMemoryRequest("keep me, the quasar fact", "fact", 0.5))
    first.app.use_cases.append_turn()(AppendTurnRequest("c1", "user", "quasar talk", 0))
    assert first.app.adapters.vectors().count("memory") == 0 and first.app.adapters.store().oldest_queued()
    first.app.shutdown_resources()

    second = runtime(tmp_path)
    second.ensure_ready()
    hits = second.app.use_cases.search_memories()(SearchMemoriesRequest("quasar fact", 1, mode="vector"))
    assert [h.id for h in hits] == [kept.id]  # found from the store's queue, or the index once synced
    second.app.use_cases.sync_vectors().catch_up()
    assert second.app.adapters.store().oldest_queued() is None
    assert set(second.app.adapters.vectors().all_vectors("memory").values()) == {kept.id}
    assert set(second.app.adapters.vectors().all_vectors("history").values()) == {"c1_turn_0"}
    second.shutdown()


def test_stale_vectors_in_the_index_are_replaced_when_their_owner_is_synced(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    rt.ensure_ready()
    vectors = rt.app.adapters.vectors()
    vectors.upsert("history", [VectorRecord("c9_turn_0::abc::0", "c9_turn_0", [1.0] + [0.0] * 31)])
    rt.app.use_cases.append_turn()(AppendTurnRequest("c9", "user", "the real turn", 0))
    rt.app.use_cases.sync_vectors().catch_up()
    assert [v for v in vectors.all_vectors("history")] != ["c9_turn_0::abc::0"]
    assert set(vectors.all_vectors("history").values()) == {"c9_turn_0"}
    assert "c9_turn_0::abc::0" not in vectors.all_vectors("history")
    rt.shutdown()


def test_the_vector_index_is_rebuilt_from_the_store_without_embedding(tmp_path: Path) -> None:
    embedder = HashEmbedder(dimensions=32, max_tokens=64)
    rt = runtime(tmp_path, embedder)
    rt.ensure_ready()
    uc = rt.app.use_cases
    memory = uc.store_memory()(StoreMemoryRequest("the nebula preference", "preference", 0.9))
    uc.append_turn()(AppendTurnRequest("c1", "user", "nebula chat", 0))
    uc.sync_vectors().catch_up()
    before = {c: sorted(rt.app.adapters.vectors().all_vectors(c)) for c in ("memory", "history", "history_context")}
    for collection in before:
        rt.app.adapters.vectors().drop(collection)
    calls = len(embedder.calls)
    counts = uc.rebuild_vectors()()
    assert len(embedder.calls) == calls
    assert counts["memory"] == 1 and counts["history"] == 1
    after = {c: sorted(rt.app.adapters.vectors().all_vectors(c)) for c in before}
    assert after == before
    hits = uc.search_memories()(SearchMemoriesRequest("nebula preference", 1, mode="vector"))
    assert [h.id for h in hits] == [memory.id]
    rt.shutdown()


def test_a_store_of_an_older_release_takes_its_vectors_over_from_the_index(tmp_path: Path) -> None:
    """Older releases kept vectors in Chroma only: the first start copies them into the store, once."""
    import sqlite3

    first = runtime(tmp_path)
    first.ensure_ready()
    memory = first.app.use_cases.store_memory()(StoreMemoryRequest("the comet preference", "preference", 0.9))
    first.app.use_cases.sync_vectors().catch_up()
    ids = sorted(first.app.adapters.vectors().all_vectors("memory"))
    first.shutdown()
    with sqlite3.connect(tmp_path / "memtrove.sqlite3") as db:  # what an older release's store looks like
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM store_meta WHERE key = 'vectors_profile'")

    second = runtime(tmp_path)
    second.ensure_ready()
    store = second.app.adapters.store()
    assert sorted(r.id for r in store.stored_vectors("memory", "", 100)) == ids
    assert second.app.use_cases.adopt_vectors()() is None  # once only
    for collection in ("memory", "history"):
        second.app.adapters.vectors().drop(collection)
    second.app.use_cases.rebuild_vectors()()
    hits = second.app.use_cases.search_memories()(SearchMemoriesRequest("comet preference", 1, mode="vector"))
    assert [h.id for h in hits] == [memory.id]
    second.shutdown()


def test_writes_made_while_the_worker_gathers_reach_the_index_in_one_upsert(tmp_path: Path, monkeypatch) -> None:
    import time

    import entrypoints.runtime as runtime_module
    from adapters.vectors.chroma import ChromaVectorIndex

    # Generous windows: five writes take far less than 3 s even on a busy machine, and no idle look
    # at the outbox (every 0.2 s) syncs one of them before the gathering ends.
    monkeypatch.setattr(runtime_module, "GATHER", 3.0)
    monkeypatch.setattr(runtime_module, "IDLE_POLL", 60.0)
    upserted: list[tuple[str, int]] = []
    upsert = ChromaVectorIndex.upsert

    def counted(self, collection, records):
        upserted.extend([(collection, len(records))] if records else [])
        return upsert(self, collection, records)

    monkeypatch.setattr(ChromaVectorIndex, "upsert", counted)
    rt = runtime(tmp_path)
    rt.ensure_ready()
    try:
        for n in range(5):
            rt.app.use_cases.store_memory()(StoreMemoryRequest(f"gathered fact number {n}", "fact", 0.5))
            rt.kick()  # as every write tool does
        deadline = time.monotonic() + 60
        while rt.app.adapters.store().oldest_queued() is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert upserted == [("memory", 5)]  # one call, not one per write (about 16 ms each in Chroma)
    finally:
        rt.shutdown()


def test_a_shutdown_ends_the_gathering_and_syncs_what_was_written(tmp_path: Path, monkeypatch) -> None:
    import entrypoints.runtime as runtime_module

    monkeypatch.setattr(runtime_module, "GATHER", 600.0)  # far past the 5 s a shutdown waits for its workers
    rt = runtime(tmp_path)
    rt.ensure_ready()
    rt.app.use_cases.store_memory()(StoreMemoryRequest("written just before the stop", "fact", 0.5))
    rt.kick()
    rt.shutdown()
    after = runtime(tmp_path)  # not made ready: no worker of its own syncs anything
    try:
        assert after.app.adapters.store().oldest_queued() is None
        assert after.app.adapters.vectors().count("memory") == 1
    finally:
        after.shutdown()


def test_what_the_start_made_is_not_scanned_by_every_full_collection(tmp_path: Path) -> None:
    import gc

    gc.unfreeze()
    brief = Runtime(Settings(memtrove_data_dir=tmp_path, memtrove_warmup=False))
    brief.start()
    brief.ensure_ready()  # a command's, or a test's: nothing is frozen
    brief.shutdown()
    assert gc.get_freeze_count() == 0
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path, memtrove_warmup=False), long_lived=True)
    runtime.start()
    try:
        runtime.ensure_ready()
        assert gc.get_freeze_count() > 1_000  # the modules, the container, the stores' objects
    finally:
        runtime.shutdown()
        gc.unfreeze()
