"""One idf over every collection a search asks (issue 43.1): Lucene's, never zero; the words that tell records
apart; and the retriever over the fakes ranking a memory's rare word above turns that share its common words."""

from __future__ import annotations

import math

import pytest

from domain.history.usecases import AppendTurn, AppendTurnRequest
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.search.lexical import LexicalStats, idf, shared_idf, telling
from domain.search.usecases import HybridSearch, SearchMemories, SearchMemoriesRequest, SearchRequest
from tests.conftest import searcher


def test_the_idf_is_lucenes_and_never_zero_or_negative() -> None:
    assert idf(1, 1) == pytest.approx(math.log(1 + 0.5 / 1.5))  # a store of one: FTS5's was negative
    assert idf(2, 1) == pytest.approx(math.log(2))  # one of two: FTS5's was zero
    assert idf(1000, 1000) > 0 and idf(1000, 1) > idf(1000, 10) > idf(1000, 500) > idf(1000, 1000)
    assert idf(3, 7) == idf(3, 3) and idf(0, 0) > 0  # counts taken apart may disagree: never past the records


def test_one_idf_sums_records_and_holders_over_the_collections() -> None:
    memories = LexicalStats(2, {"heronpond": 1, "database": 1}, {"E4021": 1})
    chunks = LexicalStats(1000, {"heronpond": 0, "database": 36}, {"E4021": 0})
    shared = shared_idf([memories, chunks], ["heronpond", "database"])
    assert shared == {"heronpond": idf(1002, 1), "database": idf(1002, 37)}
    assert shared_idf([memories, chunks], ["E4021"], exact=True) == {"E4021": idf(1002, 1)}
    assert shared_idf([memories], ["heronpond"])["heronpond"] < shared["heronpond"]  # rarer among more records


@pytest.mark.parametrize(("records", "held", "tells"), [
    (1, 1, True), (2, 1, True), (2, 2, False), (4, 2, True), (4, 3, False), (1000, 500, True), (1000, 501, False),
    (5, 0, False)])
def test_a_word_tells_records_apart_when_at_most_half_hold_it_or_one(records: int, held: int, tells: bool) -> None:
    assert (telling([LexicalStats(records, {"w": held})], ["w"]) == {"w"}) is tells


def test_a_memorys_rare_word_outranks_turns_sharing_its_common_words(world) -> None:
    append = AppendTurn(world.embedder, world.store, world.store, world.split, world.tokenizer)
    for i in range(40):
        append(AppendTurnRequest("ops", "user", ["the database is slow again", "restore the database tonight",
                                                 "staging is down", "the staging database restarted"][i % 4], i))
    memory = StoreMemory(world.embedder, world.store, world.split, world.tokenizer)(
        StoreMemoryRequest("The heronpond staging database is restored every Sunday night.", "fact", 0.9))
    found = HybridSearch(searcher(world), world.store)(SearchRequest(
        "heronpond staging database", 10, include_memory=True, include_history=True)).hits
    assert found[0].id == memory.id and found[0].fields["signals"]["lexical"] == 1, [
        (h.content, h.fields["signals"]) for h in found]


@pytest.mark.parametrize("others", [0, 1])
def test_a_first_memory_or_two_is_found_by_its_words(world, others: int) -> None:
    store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer)
    heron = store(StoreMemoryRequest("The heronpond staging database is restored every Sunday night.", "fact", 0.9))
    for _ in range(others):
        store(StoreMemoryRequest("The release train leaves every second Thursday.", "fact", 0.9))
    found = SearchMemories(searcher(world))(SearchMemoriesRequest("heronpond", 5))
    assert found[0].id == heron.id and "lexical" in found[0].fields["signals"], found[0].fields
