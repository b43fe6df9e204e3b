"""The container wired to real embedded Chroma and SQLite files: persistence, profiles, repair."""

from __future__ import annotations

from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.memory import HashEmbedder
from config.settings import Settings
from domain.errors import ConfigurationError
from domain.model import VectorRecord
from domain.usecases.history import AppendTurnRequest
from domain.usecases.memories import StoreMemoryRequest
from domain.usecases.search import SearchMemoriesRequest
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


def test_start_repairs_vectors_left_by_an_interrupted_write(tmp_path: Path) -> None:
    first = runtime(tmp_path)
    kept = first.app.use_cases.store_memory()(StoreMemoryRequest("keep me", "fact", 0.5))
    vectors = first.app.adapters.vectors()
    vectors.upsert("memory", [VectorRecord("mem_ghost::abc::0", "mem_ghost", [1.0] + [0.0] * 31)])
    vectors.upsert("history", [VectorRecord("c9_turn_0::abc::0", "c9_turn_0", [1.0] + [0.0] * 31)])
    first.shutdown()

    second = runtime(tmp_path)
    second.ensure_ready()
    owners = set(second.app.adapters.vectors().all_vectors("memory").values())
    assert owners == {kept.id}
    assert second.app.adapters.vectors().count("history") == 0
