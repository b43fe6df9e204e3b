"""Re-embedding into another profile side by side, then switching to it on restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.memory.basics import HashEmbedder
from config.settings import Settings
from domain.errors import ConfigurationError, ValidationError
from domain.artifacts.input import IngestRequest
from domain.history.usecases import AppendTurnRequest
from domain.memories.usecases import StoreMemoryRequest
from domain.search.usecases import SearchMemoriesRequest
from domain.search.usecases import SearchRequest
from entrypoints.runtime import Runtime
from tests.support.fake_openai import FakeOpenAIServer

DOC = " ".join(f"paragraph {i} about the harbour bridge maintenance schedule" for i in range(120))


@pytest.fixture(scope="module")
def fake() -> FakeOpenAIServer:
    with FakeOpenAIServer(default_dimensions=24) as server:
        yield server


def target_settings(data_dir: Path, fake: FakeOpenAIServer, **extra: object) -> Settings:
    return Settings(memtrove_data_dir=data_dir, memtrove_warmup=False, openai_base_url=fake.base_url,
                    openai_embed_model="fake-embed", openai_embed_dims=24, **extra)


def local_runtime(data_dir: Path, fake: FakeOpenAIServer) -> Runtime:
    rt = Runtime(target_settings(data_dir, fake))
    rt.app.adapters.embedder.override(providers.Object(HashEmbedder(dimensions=32, max_tokens=64)))
    rt.start()
    rt.ensure_ready()
    return rt


def test_reembed_everything_then_switch(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    rt = local_runtime(tmp_path, fake)
    uc = rt.app.use_cases
    art = uc.ingest_artifact()(IngestRequest("doc", "drive", DOC, source_id="d1")).artifact
    uc.ingest_artifact()(IngestRequest("note", "manual", "short note about ferries"))
    memory = uc.store_memory()(StoreMemoryRequest("prefers the harbour walk", "preference", 0.8))
    uc.append_turn()(AppendTurnRequest("c1", "user", "when is the bridge closed?", 0))
    uc.sync_vectors().catch_up()
    before = rt.app.adapters.vectors().count("chunk")
    assert before == rt.app.adapters.store().count_vectors("chunk") > 0

    one = uc.reembed(target_embedder="openai-compatible")(art.id)
    assert (one.artifacts, one.complete) == (1, False)
    report = uc.reembed(target_embedder="openai-compatible")()
    assert (report.artifacts, report.memories, report.turns, report.skipped) == (1, 1, 1, 1)
    assert report.complete and rt.app.adapters.vectors().count("chunk") == before  # active index untouched
    hits = uc.hybrid_search()(SearchRequest("bridge maintenance", limit=3)).hits
    assert hits and hits[0].fields["provenance"]["embedding_provider"] == "fake"  # still the active profile
    with pytest.raises(ValidationError, match="target_embedder"):
        uc.reembed(target_embedder="word2vec")()
    rt.shutdown()

    switched = Runtime(target_settings(tmp_path, fake, memtrove_embedder="openai-compatible"))
    switched.start()
    switched.ensure_ready()
    assert switched.app.adapters.store().stored_profile().provider == "openai-compatible"
    found = switched.app.use_cases.search_memories()(SearchMemoriesRequest("prefers the harbour walk", 1))
    assert [h.id for h in found] == [memory.id]
    # The fake embeds exact text only: the query is one chunk's text, found in the new profile's index.
    chunk = switched.app.adapters.store().chunks_of(art.id)[3]
    outcome = switched.app.use_cases.hybrid_search()(SearchRequest(chunk.content[:500], limit=2,
                                                                   include_history=True))
    assert outcome.hits[0].id == chunk.id and outcome.hits[0].fields["similarity"] == pytest.approx(1.0)
    assert outcome.hits[0].fields["provenance"]["embedding_provider"] == "openai-compatible"
    # The store took the new profile's vectors over from its index at the switch: a rebuild from the
    # store gives the same index, in the new dimensions, without embedding anything.
    store, index = switched.app.adapters.store(), switched.app.adapters.vectors()
    assert store.count_vectors("chunk") == index.count("chunk") == before
    dims = {len(r.vector) for r in store.stored_vectors("chunk", "", 10_000)}
    assert dims == {switched.app.adapters.embedder().profile.dimensions}
    requests = len(fake.requests)
    assert switched.app.use_cases.rebuild_vectors()()["chunk"] == before
    assert len(fake.requests) == requests
    switched.shutdown()


def test_a_write_after_reembedding_asks_for_a_rerun(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    rt = local_runtime(tmp_path, fake)
    rt.app.use_cases.ingest_artifact()(IngestRequest("note", "manual", "first"))
    rt.app.use_cases.reembed(target_embedder="openai-compatible")()
    rt.app.use_cases.store_memory()(StoreMemoryRequest("written afterwards", "fact", 0.5))
    rt.shutdown()
    late = Runtime(target_settings(tmp_path, fake, memtrove_embedder="openai-compatible"))
    late.start()
    with pytest.raises(ConfigurationError, match="artifact_reembed"):
        late.check_store()
    rerun = local_runtime(tmp_path, fake)
    again = rerun.app.use_cases.reembed(target_embedder="openai-compatible")()
    assert (again.memories, again.artifacts) == (1, 0)
    rerun.shutdown()
    late = Runtime(target_settings(tmp_path, fake, memtrove_embedder="openai-compatible"))
    late.start()
    late.check_store()
