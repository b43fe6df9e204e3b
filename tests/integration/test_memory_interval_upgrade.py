"""A store written before memories kept their interval (issue 41, item 2) is upgraded when it opens: its
memories' rows get their interval columns, their vectors (the store's copy, and the index's, queued) the
interval metadata searches filter on, and the ended versions' words move to their own index. Then the
current versions are found in every mode and a search as of a past time finds what held then.

The older store is made by writing one with this release and taking away what the upgrade adds: the two
columns, the metadata keys (in the store's copy and in the vector index), the word index of ended
versions, and the marks that the upgrade ran. SQLite with embedded Chroma, and PostgreSQL with pgvector.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dependency_injector import providers
from sqlalchemy import create_engine, text

from adapters.memory.basics import HashEmbedder
from adapters.sql.vector_meta import pack, unpack
from config.settings import Settings
from domain.memories.usecases import StoreMemoryRequest
from domain.memories.validity import END, START
from domain.model import VectorRecord
from domain.search.usecases import SearchMemoriesRequest
from entrypoints.runtime import Runtime

CHAINS, VERSIONS = 2, 40


def opened(data_dir: Path, **settings: object) -> Runtime:
    rt = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False, **settings))
    rt.app.adapters.embedder.override(providers.Object(HashEmbedder(dimensions=64, max_tokens=256)))
    rt.start()
    rt.ensure_ready()
    return rt


def day(n: int) -> str:
    return f"2020-{1 + n // 28:02d}-{1 + n % 28:02d}T00:00:00Z"


def written(rt: Runtime) -> list[list[str]]:
    store = rt.app.use_cases.store_memory()
    versions: list[list[str]] = []
    for version in range(VERSIONS + 1):
        versions.append([store(StoreMemoryRequest(
            f"The {('harbour', 'orchard')[chain]} ledger balance is {version} euros.", "fact", 0.9,
            valid_from=day(version), supersedes=versions[-1][chain] if versions else None)).id
            for chain in range(CHAINS)])
    for n in range(8):
        store(StoreMemoryRequest(f"Note {n}: the boiler needs attention.", "fact", 0.9))
    rt.app.use_cases.sync_vectors().catch_up()
    return versions


def made_old(url: str) -> None:
    """The store as the release before wrote it (its index's metadata is taken away by the caller)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM store_meta WHERE key IN ('memory_intervals', 'memory_past_index')"))
        conn.execute(text(f"DROP INDEX ix_memories_{END}"))
        for column in (START, END):
            conn.execute(text(f"ALTER TABLE memories DROP COLUMN {column}"))
        rows = conn.execute(text("SELECT id, meta FROM vectors WHERE collection = 'memory'")).all()
        for vid, meta in rows:
            kept = {k: v for k, v in unpack("memory", vid, meta).items() if k not in (START, END)}
            conn.execute(text("UPDATE vectors SET meta = :m WHERE collection = 'memory' AND id = :i"),
                         {"m": pack("memory", VectorRecord(vid, vid.split("::")[0], [], kept)), "i": vid})
        if engine.dialect.name == "postgresql":  # the words are in lexical_docs itself
            conn.execute(text("UPDATE lexical_docs SET collection = 'memory' WHERE collection = 'memory_past'"))
            tables = conn.execute(text("SELECT tablename FROM pg_tables")).scalars()
            for table in (t for t in tables if t.startswith("vec_")):  # pgvector's table of the profile
                conn.execute(text(f"UPDATE {table} SET meta = meta - '{START}' - '{END}' WHERE collection = 'memory'"))
        else:
            past = conn.execute(text("SELECT d.id, d.record_id, m.content FROM lexical_docs d JOIN memories m "
                                     "ON m.id = d.record_id WHERE d.collection = 'memory_past'")).all()
            for rowid, record_id, content in past:
                conn.execute(text("DELETE FROM fts_memory_past WHERE rowid = :r"), {"r": rowid})
                conn.execute(text("UPDATE lexical_docs SET collection = 'memory' WHERE id = :r"), {"r": rowid})
                conn.execute(text("INSERT INTO fts_memory(rowid, body, context) VALUES (:r, :b, '')"),
                             {"r": rowid, "b": content})
            conn.execute(text("DROP TABLE fts_memory_past"))
    engine.dispose()


@pytest.fixture(params=["sqlite+chroma", "postgresql+pgvector"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, object], str]]:
    if request.param == "sqlite+chroma":
        yield tmp_path / "data", {}, f"sqlite:///{tmp_path / 'data' / 'memtrove.sqlite3'}"
        return
    from tests.e2e.test_postgres_stdio import pgvector_available
    from tests.support.postgres import fresh_database

    url = fresh_database(request.getfixturevalue("postgres_url"))
    if not pgvector_available(url):
        pytest.skip("the pgvector extension is not installed (scripts/test builds it)")
    yield tmp_path / "data", {"memtrove_database_url": url, "memtrove_vector_store": "pgvector"}, url


def test_an_older_store_is_upgraded_when_it_opens(backend) -> None:
    data_dir, settings, url = backend
    rt = opened(data_dir, **settings)
    versions = written(rt)
    vectors = rt.app.adapters.vectors()
    if not settings:  # Chroma keeps the metadata it filters on: take the interval away there too
        every = vectors.export("memory", 0, 10_000)
        vectors._collection("memory").update(ids=[r.id for r in every],  # type: ignore[attr-defined]
                                             metadatas=[{START: None, END: None}] * len(every))
        assert not any(START in r.metadata for r in vectors.export("memory", 0, 10_000))
    rt.shutdown()
    made_old(url)

    rt = opened(data_dir, **settings)
    try:
        search = rt.app.use_cases.search_memories()
        for mode in ("hybrid", "vector", "lexical"):
            found = {h.id for h in search(SearchMemoriesRequest("ledger balance euros", limit=10, mode=mode))}
            assert set(versions[-1]) <= found and not found & set(sum(versions[:-1], [])), mode
            then = {h.id for h in search(SearchMemoriesRequest("ledger balance euros", limit=10, mode=mode,
                                                               as_of=day(20)))}
            assert then == set(versions[20]), mode
        store = rt.app.adapters.store()
        # The ended versions' words are out of the live word index; every vector carries its interval.
        assert {m.record_id for m in store.lexical_search("memory", ["ledger"], 100)} == set(versions[-1])
        rt.app.use_cases.sync_vectors().catch_up()  # the upgrade queued every memory for the index
        every = rt.app.adapters.vectors().export("memory", 0, 10_000)
        assert len(every) == CHAINS * (VERSIONS + 1) + 8 and all(START in r.metadata and END in r.metadata
                                                                 for r in every)
    finally:
        rt.shutdown()
