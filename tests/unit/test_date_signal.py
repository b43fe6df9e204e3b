"""The date signal: a query that writes a date ranks the records of that time by its words, fused with the
other signals; relative dates are read against the newest record found; no date, no change."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.search.retrieval import PROFILES, RetrievalConfig
from domain.search.usecases import SearchMemories, SearchMemoriesRequest
from tests.conftest import searcher, synced


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


class Reader:
    """A stand-in for dateparser: "in March" is March of the reference's year."""

    def __init__(self) -> None:
        self.references: list[float] = []

    def __call__(self, text: str, reference: float) -> list[tuple[float, float]]:
        self.references.append(reference)
        if "March" not in text:
            return []
        year = datetime.fromtimestamp(reference, timezone.utc).year
        return [(at(f"{year}-03-01"), at(f"{year}-04-01"))]


def stored(world) -> dict[str, str]:
    ids = {}
    for month in ("01", "03", "05", "07"):
        store = StoreMemory(world.embedder, world.store, world.split, world.tokenizer,
                            clock=lambda m=month: f"2024-{m}-10T12:00:00Z")
        said = "The race went well." if month == "03" else f"Which race she ran: the city race, note {month}."
        ids[month] = store(StoreMemoryRequest(said, "fact", 0.9)).id
    return ids


def search(world, reader: Reader | None, query: str, when: float) -> list[str]:
    retrieve = searcher(synced(world))
    profiles = {**PROFILES, "recall": replace(PROFILES["recall"], when=when)}
    retrieve = replace(retrieve, dates=reader, config=RetrievalConfig(profiles=profiles))
    return [h.id for h in SearchMemories(retrieve)(SearchMemoriesRequest(query, limit=4))]


def test_a_date_in_the_query_brings_that_time_first(world) -> None:
    ids = stored(world)
    reader = Reader()
    dated = search(world, reader, "Which race did she run in March?", when=0.5)
    assert dated[0] == ids["03"] and set(dated) == set(ids.values())  # a soft filter: the others still rank
    assert reader.references == [at("2024-07-10T12:00:00")]  # "now" is the newest record found
    assert search(world, Reader(), "Which race did she run in March?", when=0.0)[0] != ids["03"]  # words alone


def test_no_date_or_no_reader_changes_nothing(world) -> None:
    stored(world)
    plain = search(world, None, "Which race did she run?", when=0.5)
    assert search(world, Reader(), "Which race did she run?", when=0.5) == plain
    assert search(world, Reader(), "Which race did she run?", when=0.0) == plain
