"""Shared fixtures: a world of in-memory fakes for the domain's unit tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from adapters.memory import HashEmbedder, InMemoryMetadataStore, InMemoryVectorIndex, WordTokenizer
from domain.model import ChunkSpec
from domain.pieces import PieceSplitter
from plugins.chunkers.token_window import TokenWindowChunker
from plugins.privacy.allow_all import AllowAllPolicy


@dataclass
class FakeWorld:
    embedder: HashEmbedder
    vectors: InMemoryVectorIndex
    store: InMemoryMetadataStore
    tokenizer: WordTokenizer
    split: PieceSplitter
    policies: list


@pytest.fixture
def world() -> FakeWorld:
    embedder = HashEmbedder(dimensions=64, max_tokens=40)
    tokenizer = WordTokenizer()
    split = PieceSplitter(embedder, TokenWindowChunker(), tokenizer, ChunkSpec(30, 5, 30))
    return FakeWorld(embedder, InMemoryVectorIndex(embedder.profile), InMemoryMetadataStore(), tokenizer,
                     split, [AllowAllPolicy()])


@dataclass
class ArtifactWorld(FakeWorld):
    artifacts: object = None


@pytest.fixture
def aworld() -> ArtifactWorld:
    from adapters.memory_artifacts import InMemoryArtifactStore

    embedder = HashEmbedder(dimensions=64, max_tokens=40)
    tokenizer = WordTokenizer()
    split = PieceSplitter(embedder, TokenWindowChunker(), tokenizer, ChunkSpec(30, 5, 30))
    store = InMemoryArtifactStore()
    return ArtifactWorld(embedder, InMemoryVectorIndex(embedder.profile), store, tokenizer, split,
                         [AllowAllPolicy()], store)
