"""Shared fixtures: a world of in-memory fakes for the domain's unit tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from adapters.memory.basics import HashEmbedder, InMemoryMetadataStore, InMemoryVectorIndex, WordTokenizer
from adapters.memory.scopes import InMemoryStore
from domain.model import ChunkSpec
from domain.pieces import PieceSplitter
from plugins.chunkers.token_window import TokenWindowChunker
from plugins.privacy.allow_all import AllowAllPolicy


@pytest.fixture(autouse=True, scope="session")
def in_process_servers() -> Iterator[None]:
    """A server a test starts with this process's environment serves in-process (MEMTROVE_SHARED=false),
    as tests/support/mcp_procs.server_env sets: a SIGKILL must reach the real server, and no detached
    shared server may outlive the run. Tests of the shared server ask for it explicitly."""
    previous = os.environ.get("MEMTROVE_SHARED")
    os.environ["MEMTROVE_SHARED"] = "false"
    yield
    if previous is None:
        os.environ.pop("MEMTROVE_SHARED", None)
    else:
        os.environ["MEMTROVE_SHARED"] = previous


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
    """Fakes of every port; the store is also the artifact store and the lexical index."""
    embedder = HashEmbedder(dimensions=64, max_tokens=40)
    tokenizer = WordTokenizer()
    split = PieceSplitter(embedder, TokenWindowChunker(), tokenizer, ChunkSpec(30, 5, 30))
    return FakeWorld(embedder, InMemoryVectorIndex(embedder.profile), InMemoryStore(), tokenizer,
                     split, [AllowAllPolicy()])


@dataclass
class ArtifactWorld(FakeWorld):
    artifacts: object = None


@pytest.fixture
def aworld() -> ArtifactWorld:
    embedder = HashEmbedder(dimensions=64, max_tokens=40)
    tokenizer = WordTokenizer()
    split = PieceSplitter(embedder, TokenWindowChunker(), tokenizer, ChunkSpec(30, 5, 30))
    store = InMemoryStore()
    return ArtifactWorld(embedder, InMemoryVectorIndex(embedder.profile), store, tokenizer, split,
                         [AllowAllPolicy()], store)


def searcher(w: FakeWorld, policies: list | None = None):
    """The hybrid retriever over a world's fakes (vector + lexical + exact, spec 004 default weights).

    Like the server's, it brings the vector index up to date with the store before it searches.
    """
    from domain.search.retrieval import RetrievalConfig
    from domain.search.ranking import Ranker
    from domain.search.retrieve import Retriever

    ranker = Ranker(w.vectors, w.store, w.store, w.store, w.policies if policies is None else policies)
    return Retriever(w.embedder, ranker, RetrievalConfig(), catch_up=syncer(w).catch_up)


def syncer(w: FakeWorld):
    """The world's vector worker: moves what the store committed into the vector index."""
    from domain.upkeep.vector_sync import SyncVectors

    return SyncVectors(w.store, w.vectors)


def synced(w: FakeWorld) -> FakeWorld:
    """The world with its vector index brought up to date (what the server's worker does)."""
    syncer(w).drain()
    return w


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL server on loopback for the whole session (tests/support/postgres.py)."""
    from tests.support.postgres import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_url(request, tmp_path):
    """A fresh SQL store's URL: a SQLite file, then a database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    from tests.support.postgres import fresh_database

    return fresh_database(request.getfixturevalue("postgres_url"))


def catalog(*chunkers):
    """A chunker catalog (the plugin registry) holding just these chunkers."""
    from plugins.manager import Registry

    return Registry({c.name: c for c in chunkers}, ())


class Crash(BaseException):
    """Like SIGKILL: no ``except Exception`` handler runs (fault injection at a checkpoint)."""


def crash_at(point: str):
    """A write path checkpoint that crashes at ``point``."""
    def checkpoint(reached: str) -> None:
        if reached == point:
            raise Crash(point)
    return checkpoint
