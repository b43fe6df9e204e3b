"""The real adapters (embedded Chroma, SQLite files, tiktoken, the local ONNX model) pass the contracts."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.chroma import ChromaVectorIndex
from adapters.embedders.local import OnnxMiniLMEmbedder
from adapters.sqlalchemy_store import SqlMetadataStore, make_engine
from adapters.tokenizers import TiktokenTokenizer
from tests.contract.artifact_store_contract import ArtifactStoreContract
from tests.contract.embedder_contract import EmbedderContract
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
