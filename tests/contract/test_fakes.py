"""The in-memory fakes pass the same contract suites as the real adapters."""

from __future__ import annotations

import pytest

from adapters.memory.basics import HashEmbedder, InMemoryMetadataStore, InMemoryVectorIndex, WordTokenizer
from tests.contract.artifact_store_contract import ArtifactStoreContract
from tests.contract.outbox_contract import OutboxContract
from tests.contract.embedder_contract import EmbedderContract
from tests.contract.lexical_index_contract import LexicalIndexContract
from tests.contract.metadata_store_contract import MetadataStoreContract
from tests.contract.tokenizer_contract import TokenizerContract
from tests.contract.vector_index_contract import PROFILE, VectorIndexContract


class TestInMemoryVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self) -> InMemoryVectorIndex:
        return InMemoryVectorIndex(PROFILE)


class TestInMemoryMetadataStore(MetadataStoreContract):
    @pytest.fixture
    def store(self) -> InMemoryMetadataStore:
        return InMemoryMetadataStore()


class TestHashEmbedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return HashEmbedder


class TestWordTokenizer(TokenizerContract):
    @pytest.fixture(scope="class")
    def tokenizer(self) -> WordTokenizer:
        return WordTokenizer()


class TestInMemoryArtifactStore(ArtifactStoreContract):
    @pytest.fixture
    def store(self):
        from adapters.memory.artifacts import InMemoryArtifactStore

        return InMemoryArtifactStore()


class TestInMemoryLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def store(self):
        from adapters.memory.scopes import InMemoryStore

        return InMemoryStore()


class TestInMemoryOutbox(OutboxContract):
    @pytest.fixture
    def store(self):
        from adapters.memory.scopes import InMemoryStore

        return InMemoryStore()
