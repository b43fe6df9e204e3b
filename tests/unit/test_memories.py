"""Memory use cases on the in-memory fakes."""

from __future__ import annotations

import pytest

from domain.errors import EmbeddingError, NotFoundError, StorageError, ValidationError
from domain.model import Hit
from domain.memories.usecases import DeleteMemory, ListMemories, StoreMemory, StoreMemoryRequest
from domain.search.usecases import SearchMemories, SearchMemoriesRequest
from tests.conftest import searcher, synced, syncer


def store_uc(world):
    return StoreMemory(world.embedder, world.store, world.split, world.tokenizer)


def search_uc(world):
    return SearchMemories(searcher(world))


def test_store_then_search_finds_it_first(world) -> None:
    store = store_uc(world)
    dark = store(StoreMemoryRequest("User prefers dark mode in editors", "preference", 0.9))
    store(StoreMemoryRequest("Timezone is PST", "fact", 0.8))
    hits = search_uc(world)(SearchMemoriesRequest("dark mode", limit=2))
    assert hits[0].id == dark.id and hits[0].type == "memory"
    assert hits[0].fields["memory_type"] == "preference" and 0 < hits[0].score <= 1
    assert hits[0].fields["provenance"]["embedding_provider"] == "fake"  # what to cite: in provenance, once
    assert hits[0].fields["snippet"] == "User prefers dark mode in editors"


def test_ids_are_long_and_unique(world) -> None:
    store = store_uc(world)
    ids = {store(StoreMemoryRequest(f"fact {i}", "fact", 0.5)).id for i in range(200)}
    assert len(ids) == 200 and all(len(i) == 36 and i.startswith("mem_") for i in ids)


def test_min_confidence_filters_inside_the_index(world) -> None:
    store = store_uc(world)
    low = [store(StoreMemoryRequest(f"coffee note {i}", "fact", 0.1)).id for i in range(30)]
    high = store(StoreMemoryRequest("coffee preference strong", "preference", 0.95)).id
    hits = search_uc(world)(SearchMemoriesRequest("coffee note", limit=5, min_confidence=0.9))
    assert [h.id for h in hits] == [high]
    assert not set(low) & {h.id for h in hits}


def test_long_memory_is_split_into_pieces_the_model_reads_whole(world) -> None:
    content = " ".join(f"word{i}" for i in range(200)) + " needle"
    memory = store_uc(world)(StoreMemoryRequest(content, "fact", 0.5))
    assert world.vectors.count("memory") == 0 and world.store.oldest_queued() is not None  # the worker's job
    pieces = synced(world).vectors.vectors_of("memory", [memory.id])[memory.id]
    assert len(pieces) > 1
    assert all(world.embedder.count_tokens(text) <= 40 for call in world.embedder.calls for text in call)
    hits = search_uc(world)(SearchMemoriesRequest("needle", limit=5))
    assert [h.id for h in hits] == [memory.id]  # one hit per memory, not per piece


def test_search_returns_limit_distinct_memories_when_pieces_crowd(world) -> None:
    store = store_uc(world)
    long_ids = [store(StoreMemoryRequest(" ".join(["apple"] * 150), "fact", 0.5)).id for _ in range(3)]
    short_ids = [store(StoreMemoryRequest(f"apple {i}", "fact", 0.5)).id for i in range(5)]
    hits = search_uc(world)(SearchMemoriesRequest("apple", limit=8))
    assert len(hits) == 8 and {h.id for h in hits} == set(long_ids + short_ids)


def test_embedding_failure_writes_nothing(world) -> None:
    world.embedder.fail_after = 0
    with pytest.raises(EmbeddingError):
        store_uc(world)(StoreMemoryRequest("anything", "fact", 0.5))
    assert world.store.memories == {} and world.store.audit == []
    assert world.store.count_vectors("memory") == 0 and world.store.oldest_queued() is None
    assert synced(world).vectors.count("memory") == 0


def test_a_failed_row_write_leaves_no_vectors_and_nothing_queued(world, monkeypatch) -> None:
    def broken(*_):
        raise StorageError("disk full")
    monkeypatch.setattr(world.store, "add_memory", broken)
    with pytest.raises(StorageError):
        store_uc(world)(StoreMemoryRequest("anything", "fact", 0.5))
    assert world.store.count_vectors("memory") == 0 and world.store.oldest_queued() is None
    assert synced(world).vectors.count("memory") == 0


def test_an_index_failure_does_not_fail_the_write_and_the_work_waits_in_the_queue(world, monkeypatch) -> None:
    def down(*_):
        raise StorageError("chroma down")
    monkeypatch.setattr(world.vectors, "upsert", down)
    memory = store_uc(world)(StoreMemoryRequest("the launch code is zebra", "fact", 0.9))
    assert world.store.memories[memory.id] == memory and world.store.count_vectors("memory") == 1
    queued = list(world.store.queued)
    with pytest.raises(StorageError, match="chroma down"):
        syncer(world).step()
    assert world.store.queued == queued and world.vectors.count("memory") == 0
    monkeypatch.undo()  # the index is back
    assert syncer(world).drain() == len(queued) and world.store.oldest_queued() is None
    assert world.vectors.count("memory") == 1
    assert [h.id for h in search_uc(world)(SearchMemoriesRequest("launch code zebra", 5))] == [memory.id]


@pytest.mark.parametrize("request_, field", [
    (StoreMemoryRequest("", "fact", 0.5), "content"),
    (StoreMemoryRequest("   \n", "fact", 0.5), "content"),
    (StoreMemoryRequest("x" * 10_001, "fact", 0.5), "content"),
    (StoreMemoryRequest("ok", "opinion", 0.5), "type"),
    (StoreMemoryRequest("ok", "fact", 1.5), "confidence"),
    (StoreMemoryRequest("ok", "fact", float("nan")), "confidence"),
    (StoreMemoryRequest("ok", "fact", True), "confidence"),
    (StoreMemoryRequest("ok", "fact", 0.5, "c" * 101), "conversation_id"),
])
def test_bad_store_input_names_the_field_and_changes_nothing(world, request_, field) -> None:
    with pytest.raises(ValidationError) as raised:
        store_uc(world)(request_)
    assert raised.value.field == field and field.split("_")[0] in raised.value.message.lower()
    assert world.store.memories == {} and world.embedder.calls == []


def test_exactly_ten_thousand_characters_is_accepted(world) -> None:
    assert store_uc(world)(StoreMemoryRequest("y " * 5000, "fact", 1.0)).content


@pytest.mark.parametrize("query, limit, floor, field, message", [
    ("x" * 501, 5, 0.0, "query", "Query exceeds maximum length of 500 characters"),
    ("", 5, 0.0, "query", "must not be empty"),
    ("ok", 0, 0.0, "limit", "Limit must be between 1 and 20"),
    ("ok", 21, 0.0, "limit", "Limit must be between 1 and 20"),
    ("ok", 5, -0.1, "min_confidence", "min_confidence must be between 0.0 and 1.0"),
])
def test_bad_search_input(world, query, limit, floor, field, message) -> None:
    with pytest.raises(ValidationError) as raised:
        search_uc(world)(SearchMemoriesRequest(query, limit, floor))
    assert raised.value.field == field and message in raised.value.message


def test_list_newest_first_and_by_type(world) -> None:
    times = iter(["2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"])
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer,
                        clock=lambda: next(times))
    a = store(StoreMemoryRequest("a", "fact", 0.5))
    b = store(StoreMemoryRequest("b", "decision", 0.5))
    c = store(StoreMemoryRequest("c", "fact", 0.5))
    listing = ListMemories(world.store, world.policies)
    assert [h.id for h in listing()] == [c.id, b.id, a.id]
    assert [h.id for h in listing("fact", 1)] == [c.id]
    with pytest.raises(ValidationError, match="Limit must be between 1 and 100"):
        listing(None, 101)
    with pytest.raises(ValidationError, match="Invalid type: nope"):
        listing("nope")


def test_delete_removes_row_vectors_and_is_audited(world) -> None:
    memory = store_uc(world)(StoreMemoryRequest("to forget", "fact", 0.5))
    assert synced(world).vectors.count("memory") == 1
    DeleteMemory(world.store)(memory.id)
    assert world.store.memories == {} and world.store.count_vectors("memory") == 0
    assert world.vectors.count("memory") == 1 and world.store.oldest_queued() is not None  # until the sync
    assert synced(world).vectors.count("memory") == 0
    assert [e.action for e in world.store.audit] == ["store", "delete"]
    with pytest.raises(NotFoundError, match=f"Memory {memory.id} not found"):
        DeleteMemory(world.store)(memory.id)


@pytest.mark.parametrize("bad", ["abc", "art_123", "mem_xyz", "mem_" + "0" * 12, 42])
def test_delete_rejects_malformed_ids(world, bad) -> None:
    with pytest.raises(ValidationError) as raised:
        DeleteMemory(world.store)(bad)
    assert raised.value.field == "memory_id" and "memory_id" in raised.value.message


def test_privacy_policies_filter_every_read(world) -> None:
    class HideSecrets:
        name = "hide"

        def filter_hits(self, hits, context) -> list[Hit]:
            return [h for h in hits if "secret" not in h.content]

    store = store_uc(world)
    store(StoreMemoryRequest("secret plan alpha", "project", 0.9))
    visible = store(StoreMemoryRequest("public plan beta", "project", 0.9))
    policies = [*world.policies, HideSecrets()]
    hits = SearchMemories(searcher(world, policies))(SearchMemoriesRequest("plan", 5))
    assert [h.id for h in hits] == [visible.id]
    assert [h.id for h in ListMemories(world.store, policies)()] == [visible.id]


def test_orphan_vectors_are_never_returned(world) -> None:
    memory = store_uc(world)(StoreMemoryRequest("ghost entry", "fact", 0.5))
    assert synced(world).vectors.count("memory") == 1
    del world.store.memories[memory.id]  # a row gone while the index still holds its vectors
    assert search_uc(world)(SearchMemoriesRequest("ghost entry", 5)) == []


def test_a_match_on_words_most_memories_hold_is_no_evidence_beside_vectors(world) -> None:
    """'user' is in most memories: BM25 gives it no weight, so it must not rank a memory in hybrid mode."""
    store = store_uc(world)
    for text in ("user likes tea", "user lives in Porto", "user owns a bike", "the dark theme suits the editor"):
        store(StoreMemoryRequest(text, "fact", 0.9))
    hybrid = search_uc(world)(SearchMemoriesRequest("user theme", limit=4))
    by_id = {h.content: h for h in hybrid}
    assert "lexical" in by_id["the dark theme suits the editor"].fields["signals"]
    assert all("lexical" not in h.fields["signals"] for h in hybrid if h.content.startswith("user"))
    lexical = search_uc(world)(SearchMemoriesRequest("user", limit=4, mode="lexical"))
    assert len(lexical) == 3  # asked for words alone, weightless matches are still all there is


def test_a_found_memory_reads_whole_while_the_page_budget_lasts_best_first() -> None:
    from domain.search.usecases import WHOLE_MEMORY_TOKENS, whole_within

    def hit(i: int, tokens: int) -> Hit:
        text = " ".join(["word"] * tokens)
        return Hit(f"mem_{i}", "memory", 1.0 / (i + 1), text, {"token_count": tokens, "snippet": text[:240]})

    shown = whole_within([hit(0, 300), hit(1, WHOLE_MEMORY_TOKENS + 1), hit(2, 500), hit(3, 250), hit(4, 10)],
                         budget=1_000)
    # 300 fits (700 left); 401 is past what one hit may take; 500 too; 250 fits (450 left); 10 does.
    assert [h.fields["whole"] for h in shown] == [True, False, False, True, True]
    short = Hit("mem_5", "memory", 1.0, "tea", {"token_count": 1, "snippet": "tea"})
    assert whole_within([short], budget=0)[0].fields["whole"] is True  # its snippet is all of it anyway


def test_memory_get_reads_one_whole_and_hides_what_the_caller_may_not_see(world) -> None:
    from domain.access.principal import Principal, RequestContext
    from domain.memories.usecases import GetMemory

    long = store_uc(world)(StoreMemoryRequest("Rollback steps: " + "freeze deploys, undo the rollout. " * 60,
                                              "project", 0.9))
    got = GetMemory(world.store, world.policies)(long.id)
    assert got.content == long.content and got.fields["token_count"] == long.token_count
    stranger = GetMemory(world.store, world.policies, identity=lambda: RequestContext(Principal("mallory")))
    with pytest.raises(NotFoundError):
        stranger(long.id)
    assert any(e.action == "denied" and e.actor == "mallory" for e in world.store.recent(5))
    with pytest.raises(ValidationError) as bad:
        GetMemory(world.store, world.policies)("mem_xyz")
    assert bad.value.field == "memory_id"
    with pytest.raises(NotFoundError):
        GetMemory(world.store, world.policies)("mem_" + "0" * 32)
