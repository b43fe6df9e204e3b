"""The relevance floor (vector-only hits below a similarity are left out) and several passages per document."""

from __future__ import annotations

from dataclasses import replace

import pytest

from domain.errors import ValidationError
from domain.model import ChunkSpec
from domain.artifacts.input import IngestRequest
from domain.artifacts.ingest import IngestArtifact
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.search.usecases import ArtifactSearch, HybridSearch, SearchMemories, SearchMemoriesRequest, SearchRequest
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog, searcher, synced

# One document whose every window speaks of zebras, and unrelated notes.
ZEBRAS = " ".join(f"zebra herd number {i} grazes on the plain near the river" for i in range(60))


def ingest(w, request: IngestRequest):
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, catalog(TokenWindowChunker()), w.tokenizer,
                          ChunkSpec(30, 5, 30), w.split)(request)


def with_config(w, **config):
    retrieve = searcher(synced(w))
    return replace(retrieve, config=replace(retrieve.config, **config))


def test_three_passages_per_document_by_default_one_or_more_on_request(aworld) -> None:
    # 14 kB: room for four passages of up to 1,500 characters (the second look's) not overlapping
    doc = ingest(aworld, IngestRequest("doc", "drive", ZEBRAS * 4, source_id="z")).artifact
    for i in range(3):
        ingest(aworld, IngestRequest("note", "manual", f"a zebra note {i}"))
    retrieve = with_config(aworld)
    one = HybridSearch(retrieve, aworld.artifacts)(SearchRequest("zebra herd grazes", limit=10, per_artifact=1)).hits
    assert [h.fields["artifact_id"] for h in one].count(doc.id) == 1
    three = HybridSearch(retrieve, aworld.artifacts)(SearchRequest("zebra herd grazes", limit=10)).hits
    assert [h.fields["artifact_id"] for h in three].count(doc.id) == 3  # the default
    assert len({h.id for h in three}) == len(three)  # distinct chunks, best first
    configured = HybridSearch(with_config(aworld, per_artifact=2), aworld.artifacts)(
        SearchRequest("zebra herd grazes", limit=10)).hits
    assert [h.fields["artifact_id"] for h in configured].count(doc.id) == 2
    passages = ArtifactSearch(retrieve, aworld.artifacts)("zebra herd grazes", 10, per_artifact=4)
    assert [h.fields["artifact_id"] for h in passages].count(doc.id) == 4


@pytest.mark.parametrize(("bad", "said"), [(0, "between 1 and 10"), (11, "between 1 and 10"), ("2", "integer"),
                                           (2.5, "integer"), (True, "integer")])
def test_a_bad_per_artifact_names_the_field_and_the_limit(aworld, bad, said) -> None:
    with pytest.raises(ValidationError) as raised:
        HybridSearch(with_config(aworld), aworld.artifacts)(SearchRequest("zebra", per_artifact=bad))
    assert raised.value.field == "per_artifact" and said in raised.value.message


def test_vector_only_hits_below_the_floor_are_left_out_and_word_evidence_is_kept(world) -> None:
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer)
    for text in ("peanut allergy: carries an epinephrine pen", "likes dark roast coffee", "walks the dog at six"):
        store(StoreMemoryRequest(text, "fact", 1.0))
    everything = SearchMemories(with_config(world, min_similarity=-1.0))
    floored = SearchMemories(with_config(world, min_similarity=0.99))
    vector_all = everything(SearchMemoriesRequest("peanut", 10, mode="vector"))
    assert len(vector_all) == 3  # without a floor, every memory is "a result"
    assert floored(SearchMemoriesRequest("zzz unrelated", 10, mode="vector")) == []
    kept = floored(SearchMemoriesRequest("peanut allergy", 10))
    assert [h.content for h in kept] == ["peanut allergy: carries an epinephrine pen"]  # found by its words
    assert "lexical" in kept[0].fields["signals"]


def test_a_shared_word_holds_against_the_floor_even_where_bm25_gives_it_no_weight(world) -> None:
    """One memory in the store: its every word is in all records (BM25 weight ~0), yet it shares them."""
    StoreMemory(world.embedder, world.store, world.split, world.tokenizer)(
        StoreMemoryRequest("the flamingo deployment pipeline", "fact", 1.0))
    floored = SearchMemories(with_config(world, min_similarity=0.99))
    assert [h.content for h in floored(SearchMemoriesRequest("flamingo pipeline", 5))] == [
        "the flamingo deployment pipeline"]
    assert floored(SearchMemoriesRequest("zebra", 5)) == []


def test_one_long_document_is_not_searched_to_the_bottom_for_a_limit_it_cannot_fill(aworld, monkeypatch) -> None:
    """Three passages per document and one document: deeper rounds add no document, so they stop."""
    ingest(aworld, IngestRequest("doc", "drive", ZEBRAS * 25, source_id="z"))  # ~600 chunks
    retrieve = with_config(aworld, min_similarity=-1.0)
    depths: list[int] = []
    original = type(retrieve.ranker).nearest

    def nearest(self, collection, vector, fetch, *args, **kwargs):
        depths.append(fetch)
        return original(self, collection, vector, fetch, *args, **kwargs)

    monkeypatch.setattr(type(retrieve.ranker), "nearest", nearest)
    hits = HybridSearch(retrieve, aworld.artifacts)(SearchRequest("zebra herd grazes", limit=10)).hits
    assert len(hits) == 3 and max(depths) < 10_000, depths


def test_expanded_passages_of_one_document_show_each_text_once(aworld) -> None:
    doc = ingest(aworld, IngestRequest("doc", "drive", ZEBRAS, source_id="z")).artifact
    hits = HybridSearch(with_config(aworld), aworld.artifacts)(
        SearchRequest("zebra herd grazes", limit=10, expand_neighbors=True)).hits
    mine = sorted(int(h.fields["chunk_index"]) for h in hits if h.fields.get("artifact_id") == doc.id)
    assert mine and all(b - a > 1 for a, b in zip(mine, mine[1:])), mine  # no hit inside another's window
