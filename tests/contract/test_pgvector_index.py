"""PgVectorIndex on a real PostgreSQL server with the pgvector extension: the contract, and its HNSW use.

The server comes from the ``postgres_url`` fixture (tests/support/postgres.py); the tests skip when
the ``vector`` extension cannot be created there (Debian: apt-get install postgresql-<major>-pgvector).
"""

from __future__ import annotations

import random

import pytest
from sqlalchemy import create_engine, event, text

from adapters.vectors.pgvector_filters import filter_sql
from adapters.vectors.pgvector import PgVectorIndex, ef_search_for, hnsw_parameters, vector_literal
from domain.errors import StorageError
from domain.model import EmbeddingProfile
from tests.contract.vector_index_contract import PROFILE, VectorIndexContract, record, unit
from tests.support.postgres import fresh_database


@pytest.fixture
def pg_engine(postgres_url: str):
    engine = create_engine(fresh_database(postgres_url))
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except Exception as exc:  # noqa: BLE001 - any failure here means: no pgvector on this server
        engine.dispose()
        pytest.skip(f"the pgvector extension cannot be created on the test server "
                    f"(apt-get install postgresql-<major>-pgvector): {str(exc).splitlines()[0]}")
    yield engine
    engine.dispose()


class TestPgVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, pg_engine) -> PgVectorIndex:
        return PgVectorIndex(PROFILE, pg_engine)


def explain(index: PgVectorIndex, collection: str, limit: int, where: dict | None = None, settings: str = "") -> str:
    """EXPLAIN of the statement ``query`` runs, in its transaction and settings (and ``settings``)."""
    sql, params = index._query_sql(collection, where, limit)
    with index.searching(limit) as conn:
        if settings:
            conn.exec_driver_sql(settings)
        probe = vector_literal([1.0] + [0.0] * (index.profile.dimensions - 1))
        return "\n".join(conn.execute(text(f"EXPLAIN {sql}"), {**params, "q": probe}).scalars())


def random_unit(rng: random.Random, dims: int) -> list[float]:
    return unit(*[rng.gauss(0, 1) for _ in range(dims)])


def fill(index: PgVectorIndex, collection: str, n: int, dims: int, seed: int = 7, **meta: object) -> None:
    rng = random.Random(seed)
    index.upsert(collection, [record(f"r{i}::1::0", f"r{i}", random_unit(rng, dims), n=i, **meta)
                              for i in range(n)])


def test_the_index_parameters_follow_the_dimensions() -> None:
    assert hnsw_parameters(384) == (12, 48) and hnsw_parameters(768) == (12, 48)  # spec 004: Jina v3 768
    assert hnsw_parameters(1024) == (16, 64)  # spec 004: Voyage 1024
    assert hnsw_parameters(1536) == (24, 128) and hnsw_parameters(3072) == (32, 200)
    assert all(ef >= 2 * m for m, ef in map(hnsw_parameters, (4, 384, 1024, 1536, 4000)))
    assert ef_search_for(10) == 40 and ef_search_for(40) == 80 and ef_search_for(100) == 200
    assert ef_search_for(5_000) == 1_000  # pgvector's ceiling


def test_the_table_has_a_cosine_hnsw_index_per_collection_and_a_record_btree(pg_engine) -> None:
    profile = EmbeddingProfile("fake", "m", 1024, 64)
    index = PgVectorIndex(profile, pg_engine)
    fill(index, "memory", 3, 1024)
    with pg_engine.connect() as conn:
        defs = dict(conn.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t"),
                                 {"t": index.table}).all())
    hnsw = defs[index._index_name("memory")]
    assert "USING hnsw (embedding vector_cosine_ops)" in hnsw and "m='16'" in hnsw.replace(" ", "")
    assert "ef_construction='64'" in hnsw.replace(" ", "") and "WHERE (collection = 'memory'::text)" in hnsw
    assert any("btree (collection, record_id)" in d for d in defs.values())


def test_explain_shows_the_hnsw_index(pg_engine) -> None:
    """3,000 vectors of 64 dimensions: the planner picks the HNSW index on its own (no enable_seqscan
    = off), unfiltered, in a collection beside a bigger one, and with a filter keeping a tenth of the
    rows; there the iterative scan fills k though ef_search's candidates hold fewer matches."""
    index = PgVectorIndex(EmbeddingProfile("fake", "bench", 64, 64), pg_engine)
    rng = random.Random(5)
    index.upsert("chunk", [record(f"r{i}::1::0", f"r{i}", random_unit(rng, 64), session_id=f"s{i % 10}")
                           for i in range(3_000)])
    fill(index, "memory", 300, 64, seed=8)
    with pg_engine.begin() as conn:
        conn.execute(text(f"ANALYZE {index.table}"))
    hnsw = index._index_name("chunk")
    assert f"Index Scan using {hnsw}" in explain(index, "chunk", 10)
    assert f"Index Scan using {index._index_name('memory')}" in explain(index, "memory", 10)
    assert f"Index Scan using {hnsw}" in explain(index, "chunk", 10, {"session_id": "s1"})
    probe = random_unit(random.Random(99), 64)
    found = index.query("chunk", probe, 10, {"session_id": "s1"})  # ef_search 40: about 4 of them match
    assert len(found) == 10 and {m.id for m in found} <= {f"r{i}::1::0" for i in range(1, 3_000, 10)}
    assert all(x.score >= y.score for x, y in zip(found, found[1:]))


def test_ef_search_is_raised_for_large_limits(pg_engine) -> None:
    index = PgVectorIndex(EmbeddingProfile("fake", "ef", 16, 64), pg_engine)
    fill(index, "memory", 400, 16)
    with index.searching(10) as conn:
        assert conn.execute(text("SHOW hnsw.ef_search")).scalar() == "40"
    with index.searching(150) as conn:
        assert conn.execute(text("SHOW hnsw.ef_search")).scalar() == "300"
        assert conn.execute(text("SHOW hnsw.iterative_scan")).scalar() == "relaxed_order"
    with pg_engine.connect() as conn:  # SET LOCAL: gone once the query's transaction ends
        conn.execute(text("SELECT 1 FROM pg_extension"))
        assert conn.execute(text("SELECT current_setting('hnsw.ef_search', true)")).scalar() in (None, "", "40")
    seen: list[str] = []
    event.listen(pg_engine, "before_cursor_execute", lambda *a: seen.append(f"{a[2]} {a[3]}"))
    hits = index.query("memory", random_unit(random.Random(1), 16), 150)
    assert len(hits) == 150 and any("hnsw.ef_search" in s and "'300'" in s for s in seen)


def test_filters_on_label_fields(pg_engine) -> None:
    index = PgVectorIndex(PROFILE, pg_engine)
    index.upsert("chunk", [
        record("a::1::0", "a", unit(1, 0, 0, 0), session_id="s1", **{"tag:red": True}, ts=5),
        record("b::1::0", "b", unit(1, 1, 0, 0), session_id="s1", ts=9),
        record("c::1::0", "c", unit(0, 1, 0, 0), session_id="s2", **{"tag:red": True}, ts=7),
        record("d::1::0", "d", unit(0, 0, 1, 0), session_id=None, title="no session"),
    ])
    ids = lambda where: {m.record_id for m in index.query("chunk", unit(1, 1, 1, 1), 10, where)}  # noqa: E731
    assert ids({"session_id": "s1", "tag:red": True}) == {"a"}
    assert ids({"tag:red": True}) == {"a", "c"}
    assert ids({"session_id": {"$in": ["s2", "s9"]}}) == {"c"}
    assert ids({"session_id": {"$ne": "s1"}}) == {"c"}  # an absent field matches nothing, $ne too
    assert ids({"ts": {"$gte": 6, "$lte": 9}}) == {"b", "c"}
    assert ids({"ts": {"$gte": "6"}}) == set()  # a string bound never compares with numbers
    assert ids({"record_id": {"$in": ["a", "d"]}}) == {"a", "d"}
    assert sorted(index.vector_ids("chunk", {"tag:red": True})) == ["a::1::0", "c::1::0"]
    index.delete_where("chunk", {"session_id": "s1"})
    assert index.count("chunk") == 2
    assert index.export("chunk", 0, 10)[1].metadata == {"title": "no session"}


def test_owner_lookups_use_the_metadata_gin_and_record_btree(pg_engine) -> None:
    """What the vector worker asks on every batch (vector_ids by owner) reads an index, not the table."""
    index = PgVectorIndex(EmbeddingProfile("fake", "owners", 8, 64), pg_engine)
    rng = random.Random(3)
    index.upsert("chunk", [record(f"art_{i}::v::{j}", f"art_{i}", random_unit(rng, 8), artifact_id=f"art_{i}")
                           for i in range(2_000) for j in range(2)])
    with pg_engine.begin() as conn:
        conn.execute(text(f"ANALYZE {index.table}"))
    where = {"artifact_id": {"$in": ["art_7", "art_1999", "art_x"]}}
    assert index.vector_ids("chunk", where) == ["art_1999::v::0", "art_1999::v::1", "art_7::v::0", "art_7::v::1"]
    assert index.vector_ids("chunk", {"record_id": {"$in": ["art_3", 3]}}) == ["art_3::v::0", "art_3::v::1"]
    assert index.vector_ids("chunk", {"artifact_id": {"$in": []}}) == []
    for where, used in ((where, "_meta_gin"), ({"record_id": {"$in": ["art_3"]}}, "_record_rec")):
        conditions, params = filter_sql(where)
        with pg_engine.connect() as conn:
            plan = "\n".join(conn.execute(text(f"EXPLAIN SELECT id FROM {index.table} WHERE collection = 'chunk'"
                                               f"{conditions}"), params).scalars())
        assert f"{index.table}{used}" in plan


def test_profiles_above_2000_dimensions_index_a_halfvec(pg_engine) -> None:
    profile = EmbeddingProfile("fake", "large", 3072, 8192)
    index = PgVectorIndex(profile, pg_engine)
    fill(index, "chunk", 60, 3072)
    with pg_engine.connect() as conn:
        hnsw = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"),
                            {"n": index._index_name("chunk")}).scalar()
    assert "halfvec(3072)" in hnsw and "halfvec_cosine_ops" in hnsw
    rng = random.Random(7)
    first = random_unit(rng, 3072)
    found = index.query("chunk", first, 5)
    assert found[0].id == "r0::1::0" and found[0].score == pytest.approx(1.0, abs=1e-5)  # full-precision score
    # 60 rows: the planner would sort them all; enable_seqscan = off shows the halfvec index serves the query
    plan = explain(index, "chunk", 5, settings="SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
    assert f"Index Scan using {index._index_name('chunk')}" in plan and "halfvec" in plan
    assert len(index.export("chunk", 0, 1)[0].vector) == 3072
    index.rebuild("chunk")
    assert index.query("chunk", first, 1)[0].id == "r0::1::0"


def test_profiles_with_long_keys_get_distinct_short_names(pg_engine) -> None:
    one = PgVectorIndex(EmbeddingProfile("openai-compatible", "x" * 80 + "a", 4, 64), pg_engine)
    two = PgVectorIndex(EmbeddingProfile("openai-compatible", "x" * 80 + "b", 4, 64), pg_engine)
    assert one.table != two.table and len(one.table) <= 63
    one.upsert("memory", [record("a::1::0", "a", unit(1, 0, 0, 0))])
    assert one.count("memory") == 1 and two.count("memory") == 0


def test_failures_are_storage_errors_naming_postgresql(pg_engine) -> None:
    index = PgVectorIndex(PROFILE, pg_engine)
    with pytest.raises(StorageError, match="PostgreSQL"):
        index.upsert("memory", [record("a::1::0", "a", [1.0, 0.0])])  # 2 dimensions into a 4-dimension table
    with pytest.raises(ValueError, match="collection name"):
        index.upsert("memory'; drop table x; --", [record("a::1::0", "a", unit(1, 0, 0, 0))])


def test_a_server_without_pgvector_gets_a_clear_error(postgres_url: str, monkeypatch) -> None:
    import adapters.vectors.pgvector

    monkeypatch.setattr(adapters.vectors.pgvector, "EXTENSION", "vector_not_installed_here")
    index = PgVectorIndex(PROFILE, fresh_database(postgres_url))
    with pytest.raises(StorageError, match=r"apt-get install postgresql-\d+-pgvector"):
        index.count("memory")
    index.close()
