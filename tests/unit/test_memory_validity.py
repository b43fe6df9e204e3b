"""A memory's valid time on the in-memory fakes (issue 41, item 6): a supersession that would end a version
before it began is refused, naming valid_from and both times, with nothing written; a memory holds inside
its interval only (a future valid_from: not yet; superseded by a later version: until that one begins)."""

from __future__ import annotations

import pytest

from domain.errors import NotFoundError, ValidationError
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.memories.validity import holding, holds, interval
from domain.search.usecases import SearchMemories, SearchMemoriesRequest
from domain.validation import epoch
from tests.conftest import searcher


def store_uc(world, clock=lambda: "2025-06-01T00:00:00Z"):
    return StoreMemory(world.embedder, world.store, world.split, world.tokenizer, clock=clock)


def found(world, query: str, **asked: object) -> list[str]:
    return [h.id for h in SearchMemories(searcher(world))(SearchMemoriesRequest(query, 10, **asked))]


def test_a_chain_whose_new_version_begins_before_the_one_it_supersedes_is_refused_at_it(world) -> None:
    store = store_uc(world)
    a = store(StoreMemoryRequest("The rent is 900 euros.", "fact", 0.9, valid_from="2020-01-01"))
    b = store(StoreMemoryRequest("The rent is 950 euros.", "fact", 0.9, valid_from="2022-01-01", supersedes=a.id))
    calls, queued, audit = len(world.embedder.calls), list(world.store.queued), list(world.store.audit)
    with pytest.raises(ValidationError) as refused:
        store(StoreMemoryRequest("The rent is 920 euros.", "fact", 0.9, valid_from="2021-01-01", supersedes=b.id))
    assert refused.value.field == "valid_from"
    assert "2021-01-01" in refused.value.message and "2022-01-01" in refused.value.message
    assert b.id in refused.value.message
    # Nothing written: no embedding, no row, nothing queued or audited; B still holds.
    assert len(world.embedder.calls) == calls and world.store.queued == queued and world.store.audit == audit
    assert set(world.store.memories) == {a.id, b.id} and world.store.memories[b.id].superseded_by is None
    assert found(world, "rent euros", as_of="2021-06-01") == [a.id]  # one version held then, not two
    assert found(world, "rent euros") == [b.id]
    # A version may begin when the one it supersedes did (that one then never held) or later.
    c = store(StoreMemoryRequest("The rent is 960 euros.", "fact", 0.9, valid_from="2022-01-01", supersedes=b.id))
    assert not holds(world.store.memories[b.id], None) and found(world, "rent euros") == [c.id]


def test_a_version_stored_without_valid_from_cannot_supersede_one_that_begins_later(world) -> None:
    store = store_uc(world)  # stored 2025-06-01
    planned = store(StoreMemoryRequest("From 2030 the office is in Lyon.", "fact", 0.9, valid_from="2030-01-01"))
    with pytest.raises(ValidationError) as refused:
        store(StoreMemoryRequest("The office is in Paris.", "fact", 0.9, supersedes=planned.id))
    assert refused.value.field == "valid_from" and "when it is stored" in refused.value.message
    assert "2025-06-01T00:00:00Z" in refused.value.message and "2030-01-01" in refused.value.message
    assert set(world.store.memories) == {planned.id}


def test_a_missing_memory_to_supersede_is_not_found_before_anything_is_embedded(world) -> None:
    with pytest.raises(NotFoundError, match="not found"):
        store_uc(world)(StoreMemoryRequest("x", "fact", 1.0, supersedes="mem_" + "0" * 32))
    assert world.embedder.calls == [] and world.store.memories == {}


def test_a_memory_holds_inside_its_interval_only(world) -> None:
    store = store_uc(world)
    now = store(StoreMemoryRequest("The kettle is broken.", "fact", 0.9))
    future = store(StoreMemoryRequest("The kettle is replaced.", "fact", 0.9, valid_from="2030-01-01",
                                      supersedes=now.id))
    ended = world.store.memories[now.id]
    assert interval(ended) == (epoch("2025-06-01T00:00:00Z"), epoch("2030-01-01"))
    assert holds(ended, None) and not holds(future, None)  # the old one holds until its successor begins
    assert holds(future, epoch("2030-01-01")) and not holds(ended, epoch("2030-01-01"))
    meta = world.store.stored[("memory", now.id)]  # its vectors carry the end, for the index's filter
    assert all(r.metadata["valid_to_epoch"] == epoch("2030-01-01") for r, _ in meta.values())
    assert holding(5.0) == {"valid_from_epoch": {"$lte": 5.0}, "valid_to_epoch": {"$gt": 5.0}}
    assert found(world, "kettle") == [now.id]
    assert found(world, "kettle", as_of="2031-01-01") == [future.id]


def test_an_index_with_costly_filters_is_asked_by_time_only_when_its_answer_needs_it(world) -> None:
    """Chroma's filtered query took ten times its plain one at 10,000 memories: it is asked for the memories
    that hold only when its plain answers (as deep as four times) hold too few; the hits are those of an
    index asked every time."""
    from adapters.memory.basics import InMemoryVectorIndex

    class Costly(InMemoryVectorIndex):
        filters_cheaply = False
        asked: list[object] = []

        def query(self, collection, vector, limit, where=None):
            self.asked.append(where)
            return super().query(collection, vector, limit, where)

    store = store_uc(world)
    for n in range(12):
        store(StoreMemoryRequest(f"Harbour note {n}: the crane needs oil.", "fact", 0.9))
    cheap = [h.id for h in SearchMemories(searcher(world))(SearchMemoriesRequest("harbour crane oil", 5, mode="vector"))]
    world.vectors.__class__ = Costly  # the same vectors, behind costly filters
    costly = SearchMemories(searcher(world))
    assert [h.id for h in costly(SearchMemoriesRequest("harbour crane oil", 5, mode="vector"))] == cheap
    assert Costly.asked and not any("valid_to_epoch" in (w or {}) for w in Costly.asked)  # every memory holds
    previous = None
    for version in range(300):  # a history that fills every plain answer
        previous = store(StoreMemoryRequest("The harbour crane oil level is low.", "fact", 0.9,
                                            valid_from=f"2020-01-01T{version // 60:02d}:{version % 60:02d}:00Z",
                                            supersedes=previous.id if previous else None))
    Costly.asked.clear()
    got = [h.id for h in costly(SearchMemoriesRequest("harbour crane oil level", 5, mode="vector"))]
    assert previous.id in got and any("valid_to_epoch" in (w or {}) for w in Costly.asked)
    world.vectors.__class__ = InMemoryVectorIndex
    assert got == [h.id for h in SearchMemories(searcher(world))(SearchMemoriesRequest("harbour crane oil level", 5,
                                                                                       mode="vector"))]
