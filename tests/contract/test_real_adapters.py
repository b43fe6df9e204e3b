"""The real adapters (embedded Chroma, SQLite files, tiktoken, the local ONNX model) pass the contracts."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.chroma import ChromaVectorIndex
from adapters.embedders.local import OnnxMiniLMEmbedder
from adapters.sqlalchemy_store import SqlMetadataStore, make_engine
from adapters.tokenizers import TiktokenTokenizer
from tests.contract.artifact_store_contract import ArtifactStoreContract
from tests.contract.outbox_contract import OutboxContract
from tests.contract.embedder_contract import EmbedderContract
from tests.contract.lexical_index_contract import LexicalIndexContract
from tests.contract.metadata_store_contract import MetadataStoreContract
from tests.contract.tokenizer_contract import TokenizerContract
from tests.contract.vector_index_contract import PROFILE, VectorIndexContract


class TestChromaVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> ChromaVectorIndex:
        return ChromaVectorIndex(PROFILE, path=str(tmp_path / "chroma"))


class TestSqliteMetadataStore(MetadataStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        store = SqlMetadataStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestTiktokenTokenizer(TokenizerContract):
    @pytest.fixture(scope="class")
    def tokenizer(self) -> TiktokenTokenizer:
        return TiktokenTokenizer()


_LOCAL = OnnxMiniLMEmbedder()


class TestOnnxMiniLMEmbedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return lambda: _LOCAL


class TestSqliteArtifactStore(ArtifactStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sqlalchemy_artifacts import SqlArtifactStore

        store = SqlArtifactStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestSqliteLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sqlalchemy_ledger import SqlStore

        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


def test_the_lexical_index_is_built_from_existing_rows_when_missing(tmp_path: Path) -> None:
    """A store written before the lexical index existed gets it built, in one go, on first open."""
    from sqlalchemy import text

    from adapters.sqlalchemy_ledger import SqlStore
    from tests.contract.lexical_index_contract import AUDIT, memory, turn

    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = SqlStore(make_engine(url))
    store.add_memory(memory("mem_a", "the lighthouse keeper"), AUDIT)
    store.put_turn(turn("c1", 0, "we sailed to the lighthouse"), AUDIT)
    with store._engine.begin() as conn:  # the state an older release left behind
        for table in ("fts_memory", "fts_history", "lexical_docs"):
            conn.execute(text(f"DELETE FROM {table}"))
        conn.execute(text("DELETE FROM store_meta WHERE key = 'lexical_index'"))
    store.close()
    reopened = SqlStore(make_engine(url))
    assert [m.record_id for m in reopened.lexical_search("memory", ["lighthouse"], 5)] == ["mem_a"]
    assert [m.record_id for m in reopened.lexical_search("history", ["lighthouse"], 5)] == ["c1_turn_0"]
    reopened.close()


def test_an_interrupted_rebuild_is_finished_on_the_next_open(tmp_path: Path) -> None:
    from tests.contract.vector_index_contract import record, unit

    first = ChromaVectorIndex(PROFILE, path=str(tmp_path / "chroma"))
    first.upsert("memory", [record("a::1::0", "a", unit(1, 0, 0, 0)), record("b::1::0", "b", unit(0, 1, 0, 0))])
    client = first._connect()
    spare = client.create_collection(first._spare_name("memory"), embedding_function=None)
    got = first._collection("memory").get(include=["embeddings", "metadatas"])
    spare.add(ids=got["ids"], embeddings=got["embeddings"], metadatas=got["metadatas"])
    client.delete_collection(first.collection_name("memory"))  # killed right after dropping the old one
    reopened = ChromaVectorIndex(PROFILE, path=str(tmp_path / "chroma"))
    assert reopened.all_vectors("memory") == {"a::1::0": "a", "b::1::0": "b"}
    assert reopened.query("memory", unit(0, 1, 0, 0), 1)[0].record_id == "b"


def test_a_lexical_query_scores_at_most_the_budget_dropping_its_commonest_words(sql_url: str, monkeypatch) -> None:
    import adapters.fts
    from adapters.sqlalchemy_ledger import SqlStore
    from tests.contract.lexical_index_contract import AUDIT, memory

    store = SqlStore(make_engine(sql_url))
    for i in range(12):
        store.add_memory(memory(f"mem_{i:02d}", f"weekly status report {i}" + (" quarterly" if i < 3 else "")), AUDIT)
    store.add_memory(memory("mem_zebra", "status of the zebra enclosure"), AUDIT)
    monkeypatch.setattr(adapters.fts, "MATCH_BUDGET", 5)
    with store._engine.connect() as conn:  # noqa: SLF001 - the backend's choice of words
        assert store._lexical.selective(conn, "memory", ["status", "quarterly", "zebra"]) == {"zebra": 1, "quarterly": 3}
    found = [m.record_id for m in store.lexical_search("memory", ["status", "quarterly", "zebra"], 10)]
    assert found[0] == "mem_zebra" and set(found) == {"mem_zebra", "mem_00", "mem_01", "mem_02"}
    # Every word common: the newest records holding them all are scored (bounded), not nothing at all.
    assert {m.record_id for m in store.lexical_search("memory", ["status"], 10)} == {
        "mem_zebra", "mem_11", "mem_10", "mem_09", "mem_08"}
    assert {m.record_id for m in store.lexical_search("memory", ["weekly", "status"], 10)} == {
        "mem_11", "mem_10", "mem_09", "mem_08", "mem_07"}  # all of them first: "weekly status", not the zebra
    assert {m.record_id for m in store.lexical_search("memory", ["weekly", "status", "enclosure"], 10)} == {
        "mem_zebra"}  # enclosure is rare: the usual path
    assert store.lexical_search("memory", ["nowhere"], 10) == []
    if sql_url.startswith("sqlite"):  # an exact token that common: its newest records (PostgreSQL: not capped yet)
        assert {m.record_id for m in store.exact_search("memory", ["report"], 10)} == {
            "mem_11", "mem_10", "mem_09", "mem_08", "mem_07"}
        assert [m.record_id for m in store.exact_search("memory", ["zebra"], 10)] == ["mem_zebra"]
    monkeypatch.setattr(adapters.fts, "MATCH_BUDGET", 0)
    assert store.lexical_search("memory", ["status"], 10) == []  # nothing may be scored: the vectors answer alone
    store.close()


class TestSqliteOutbox(OutboxContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sqlalchemy_ledger import SqlStore

        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'outbox.sqlite3'}"))
        yield store
        store.close()
