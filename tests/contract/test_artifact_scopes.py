"""The ArtifactScopes contract against the in-memory fake, a SQLite file and a real PostgreSQL server;
and both vector indexes (Chroma embedded, the fake) filtering on label fields of the vector metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.sql.store import make_engine
from domain.artifacts.usecases import vector_metadata
from domain.model import VectorRecord
from domain.sessions.scope import iteration_order
from tests.contract.artifact_scopes_contract import ArtifactScopesContract, labelled, session
from tests.contract.vector_index_contract import PROFILE as VECTOR_PROFILE
from tests.contract.vector_index_contract import unit


class TestInMemoryArtifactScopes(ArtifactScopesContract):
    @pytest.fixture
    def store(self):
        from adapters.memory.scopes import InMemoryStore

        return InMemoryStore()


class TestSqliteArtifactScopes(ArtifactScopesContract):
    on_disk = True

    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sql.ledger import SqlStore

        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestPostgresArtifactScopes(ArtifactScopesContract):
    on_disk = True

    @pytest.fixture
    def store(self, postgres_url: str):
        from adapters.sql.ledger import SqlStore
        from tests.support.postgres import fresh_database

        store = SqlStore(make_engine(fresh_database(postgres_url)))
        yield store
        store.close()


def test_the_sqlite_store_size_is_its_files(tmp_path: Path) -> None:
    from adapters.sql.ledger import SqlStore

    path = tmp_path / "store.sqlite3"
    store = SqlStore(make_engine(f"sqlite:///{path}"))
    try:
        files = [p for p in tmp_path.iterdir() if p.name.startswith("store.sqlite3")]
        assert store.storage_bytes() == sum(p.stat().st_size for p in files) > 0
    finally:
        store.close()


# --- the vector indexes ------------------------------------------------------------------------

LABELLED = {
    "art_r_s1": (session("report", "s1", "v1", tags=["red"]), unit(1, 0, 0, 0)),
    "art_r_s1b": (session("report", "s1", "v10", tags=["blue"]), unit(1, 0.1, 0, 0)),
    "art_w_s1": (session("working_memory", "s1", "v1", tags=["red", "blue"]), unit(1, 0.2, 0, 0)),
    "art_r_s2": (session("report", "s2", "v1", tags=["red"]), unit(1, 0.3, 0, 0)),
    "art_none": ({}, unit(1, 0.4, 0, 0)),
    "art_redder": ({"session_id": "s3", "tags": ["redder"]}, unit(1, 0.5, 0, 0)),
}


@pytest.fixture(params=["chroma", "memory"])
def vectors(request, tmp_path: Path):
    if request.param == "chroma":
        from adapters.vectors.chroma import ChromaVectorIndex

        return ChromaVectorIndex(VECTOR_PROFILE, path=str(tmp_path / "chroma"))
    from adapters.memory.basics import InMemoryVectorIndex

    return InMemoryVectorIndex(VECTOR_PROFILE)


def _fill(index) -> None:
    records = []
    for aid, (labels, vector) in LABELLED.items():
        a = labelled(aid, labels)
        metadata = vector_metadata(a)
        records.append(VectorRecord(f"{aid}::{a.version}::0", aid, vector, metadata))
        records.append(VectorRecord(f"{aid}::{a.version}::1", aid, unit(0, 1, 0, 0), metadata))
    index.upsert("artifact", records)


@pytest.mark.parametrize(("where", "expected"), [
    ({"session_id": "s1", "memory_type": "report"}, {"art_r_s1", "art_r_s1b"}),
    ({"session_id": "s1"}, {"art_r_s1", "art_r_s1b", "art_w_s1"}),
    ({"tag:red": True}, {"art_r_s1", "art_w_s1", "art_r_s2"}),
    ({"tag:blue": True, "memory_type": "report"}, {"art_r_s1b"}),
    ({"tag:red": True, "tag:blue": True}, {"art_w_s1"}),
    ({"iter_order": iteration_order("v10")}, {"art_r_s1b"}),
    ({"session_id": "s1", "source_system": "sessions", "tag:red": True}, {"art_r_s1", "art_w_s1"}),
    ({"tag:green": True}, set()),
    ({"session_id": "nobody"}, set()),
])
def test_vector_queries_filter_on_labels_and_tags(vectors, where: dict, expected: set[str]) -> None:
    _fill(vectors)
    found = vectors.query("artifact", unit(1, 0, 0, 0), 20, where)
    assert {m.record_id for m in found} == expected
    assert len(found) == 2 * len(expected)
    assert {i.split("::", 1)[0] for i in vectors.vector_ids("artifact", where)} == expected


def test_vector_metadata_carries_the_labels_as_scalar_fields() -> None:
    a = labelled("art_m", {**session("report", "s1", "v2"), "tags": ["red", "blue"]})
    metadata = vector_metadata(a)
    assert metadata["session_id"] == "s1" and metadata["memory_type"] == "report"
    assert metadata["session_iter"] == "v2" and metadata["iter_order"] == iteration_order("v2")
    assert metadata["tag:red"] is True and metadata["tag:blue"] is True
    assert "tags" not in metadata
    assert all(isinstance(v, (str, int, float, bool)) for v in metadata.values())
