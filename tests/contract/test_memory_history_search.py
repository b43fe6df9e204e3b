"""Memories with a long history, searched on every backend: the in-memory fakes, SQLite with embedded Chroma,
and PostgreSQL with pgvector (issue 41, items 2 and 6).

Versions that do not hold at the time asked are kept out inside the indexes, so a current memory superseded
160 times ranks exactly as it would with no history at all, in hybrid, vector and lexical mode; a search
as of a past time still finds the version that held then; a memory whose valid time is still to come does
not hold now. The embedder is the deterministic ``HashEmbedder``; each store is compared with a store of
the same current memories written without their history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.memory.basics import HashEmbedder
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.model import Hit
from domain.search.usecases import SearchMemories, SearchMemoriesRequest
from tests.conftest import FakeWorld, searcher, syncer

CHAINS, VERSIONS = 4, 160
START = datetime(2020, 1, 1, tzinfo=timezone.utc)
NAMES = ("harbour", "orchard gate", "quarry lane depot", "north mill storage shed")
# Other memories holding the word. No two of the memories holding it are of one length (in words, and in
# PostgreSQL's lexemes), so none score alike: equal scores are ordered by id, and ids differ between stores.
OTHERS = ("The ledger archive sits in the basement beside the old boiler room near the stairs and the lift.",
          "Invoices get checked against the ledger daily.",
          "The team reads the ledger on Tuesdays before reviewing the roadmap, the budget, the rota, the office lease "
          "and the hiring plan each week.",
          "Ledger backups nightly.")
# And memories without it, so that it is a rare word (BM25 gives a word most records hold no weight).
UNRELATED = tuple(f"Note {n}: the {thing} needs attention this week." for n, thing in enumerate(
    ("boiler", "roof", "van", "printer", "garden", "alarm", "fence", "kettle", "lift", "gate")))
MODES = ("hybrid", "vector", "lexical")


def day(n: float) -> str:
    return (START + timedelta(days=n)).isoformat().replace("+00:00", "Z")


def version_text(chain: int, version: int) -> str:
    return f"The {NAMES[chain]} ledger balance is {version * 10 + chain} euros after revision {version}."


@dataclass
class Backend:
    store: Callable[[StoreMemoryRequest], object]
    search: Callable[[SearchMemoriesRequest], list[Hit]]
    catch_up: Callable[[], object]  # the vector index made to hold what the store committed
    vectors: object = None  # the vector index (a real one)


def fake_backend(_: Path) -> Iterator[Backend]:
    from adapters.memory.basics import InMemoryVectorIndex, WordTokenizer
    from adapters.memory.scopes import InMemoryStore
    from domain.model import ChunkSpec
    from domain.pieces import PieceSplitter
    from plugins.chunkers.token_window import TokenWindowChunker
    from plugins.privacy.allow_all import AllowAllPolicy

    embedder, tokenizer = HashEmbedder(dimensions=64, max_tokens=256), WordTokenizer()
    split = PieceSplitter(embedder, TokenWindowChunker(), tokenizer, ChunkSpec(200, 32, 200))
    world = FakeWorld(embedder, InMemoryVectorIndex(embedder.profile), InMemoryStore(), tokenizer, split,
                      [AllowAllPolicy()])
    yield Backend(StoreMemory(embedder, world.store, split, tokenizer), SearchMemories(searcher(world)),
                  syncer(world).drain)


def runtime_backend(data_dir: Path, **settings: object) -> Iterator[Backend]:
    from config.settings import Settings
    from entrypoints.runtime import Runtime

    rt = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False, **settings))
    rt.app.adapters.embedder.override(providers.Object(HashEmbedder(dimensions=64, max_tokens=256)))
    rt.start()
    rt.ensure_ready()
    try:
        yield Backend(rt.app.use_cases.store_memory(), rt.app.use_cases.search_memories(),
                      rt.app.use_cases.sync_vectors().catch_up, rt.app.adapters.vectors())
    finally:
        rt.shutdown()


@pytest.fixture(params=["fake", "sqlite+chroma", "postgresql+pgvector"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Backend]]:
    """Opens fresh backends of one kind (each a store of its own), closed after the test."""
    from contextlib import ExitStack, contextmanager

    if request.param == "fake":
        make = fake_backend
    elif request.param == "sqlite+chroma":
        make = runtime_backend
    else:
        from tests.e2e.test_postgres_stdio import pgvector_available
        from tests.support.postgres import fresh_database

        server = request.getfixturevalue("postgres_url")
        if not pgvector_available(server):
            pytest.skip("the pgvector extension is not installed (scripts/test builds it)")

        def make(data_dir: Path) -> Iterator[Backend]:
            yield from runtime_backend(data_dir, memtrove_database_url=fresh_database(server),
                                       memtrove_vector_store="pgvector")
    with ExitStack() as stack:
        yield lambda name: stack.enter_context(contextmanager(make)(tmp_path / name))


def with_history(backend: Backend) -> tuple[list[str], dict[int, list[str]]]:
    """The chains written version by version (each superseding the one before, valid a day later), then
    the other memories; the current versions' ids and every version's ids by version."""
    ids: dict[int, list[str]] = {}
    for version in range(VERSIONS + 1):
        for chain in range(CHAINS):
            made = backend.store(StoreMemoryRequest(
                version_text(chain, version), "fact", 0.9, valid_from=day(version + chain / 24),
                supersedes=ids[version - 1][chain] if version else None))
            ids.setdefault(version, []).append(made.id)  # type: ignore[attr-defined]
    for text in OTHERS + UNRELATED:
        backend.store(StoreMemoryRequest(text, "fact", 0.9))
    backend.catch_up()  # searched from the index alone (a write still queued is scored from the store's copy)
    return ids[VERSIONS], ids


def without_history(backend: Backend) -> None:
    for chain in range(CHAINS):
        backend.store(StoreMemoryRequest(version_text(chain, VERSIONS), "fact", 0.9,
                                         valid_from=day(VERSIONS + chain / 24)))
    for text in OTHERS + UNRELATED:
        backend.store(StoreMemoryRequest(text, "fact", 0.9))
    backend.catch_up()


def found(backend: Backend, query: str, mode: str, **asked: object) -> list[Hit]:
    return backend.search(SearchMemoriesRequest(query, limit=20, mode=mode, **asked))  # type: ignore[arg-type]


def ranked(hits: list[Hit]) -> list[tuple[str, float, object]]:
    """The hits of the word with their fused scores and similarities (to 4 places: Chroma's similarity of
    one vector was seen to differ in the 6th place from one store to another)."""
    return [(h.content, h.score, round(h.fields["similarity"], 4) if h.fields.get("similarity") is not None else None)
            for h in hits if "ledger" in h.content.lower()]


def test_a_current_memory_with_a_long_history_ranks_as_if_it_had_none(opened) -> None:
    history, plain = opened("history"), opened("plain")
    current, versions = with_history(history)
    without_history(plain)
    for mode in MODES:
        got = found(history, "ledger", mode)
        assert set(current) <= {h.id for h in got}, mode  # found by its words and its meaning, in every mode
        # The same hits with the same scores, in the same order, as a store that never had a history (those
        # of the word: the others tie at similarity 0, ordered by their ids, which differ between stores).
        expected = found(plain, "ledger", mode)
        assert ranked(got) == ranked(expected), (mode, [h.fields.get("signals") for h in got],
                                                 [h.fields.get("signals") for h in expected])
        # One word of the current version only: first, ahead of nothing it never competed with.
        assert found(history, "revision 160 quarry", mode)[0].id == current[2], mode

    if history.vectors is not None:  # rewriting the ended versions' metadata lost no live vector (chroma#7758)
        every = history.vectors.query("memory", HashEmbedder(64).embed_query("ledger"), 2_000)  # type: ignore[attr-defined]
        assert len(every) == history.vectors.count("memory")  # type: ignore[attr-defined]

    then = day(50.5)  # each chain's version 50 holds then (it began at day 50 + chain hours, ends at 51)
    for mode in MODES:
        got = {h.id for h in found(history, "ledger", mode, as_of=then)}
        assert got == set(versions[50]), mode  # what held then, and nothing that did not
        assert {h.id for h in found(history, "ledger", mode, as_of=day(VERSIONS + 1))} >= set(current)
        assert not {h.id for h in found(history, "ledger", mode, as_of=day(-1))}  # before anything held


def test_a_memory_valid_from_a_future_time_does_not_hold_yet(opened) -> None:
    backend = opened("future")
    now = backend.store(StoreMemoryRequest("The office kettle is broken.", "fact", 0.9)).id  # type: ignore[attr-defined]
    later = backend.store(StoreMemoryRequest("The team moves to the harbour building.", "fact", 0.9,
                                             valid_from="2031-03-01T00:00:00Z")).id  # type: ignore[attr-defined]
    fixed = backend.store(StoreMemoryRequest("The office kettle is fixed from 2031.", "fact", 0.9,
                                             valid_from="2031-01-01", supersedes=now)).id  # type: ignore[attr-defined]

    def ids(query: str, mode: str, **asked: object) -> list[str]:
        return [h.id for h in found(backend, query, mode, **asked)]
    for mode in MODES:
        assert later not in ids("team moves harbour building", mode), mode  # not yet
        assert ids("team moves harbour building", mode, as_of="2031-03-01")[:1] == [later], mode
        assert later not in ids("team moves harbour building", mode, as_of="2031-02-28T23:59:59Z"), mode
        # The kettle: broken now (the version that supersedes it begins in 2031), fixed from then.
        assert ids("office kettle", mode)[:1] == [now] and fixed not in ids("office kettle", mode), mode
        assert ids("office kettle", mode, as_of="2031-02-01")[:1] == [fixed], mode
        assert now not in ids("office kettle", mode, as_of="2031-02-01"), mode
