"""The SQL store's contracts against a real PostgreSQL server: rows, artifacts, audit log, lexical index."""

from __future__ import annotations

import pytest

from adapters.sql.store import make_engine
from tests.contract.artifact_store_contract import ArtifactStoreContract
from tests.contract.outbox_contract import OutboxContract, drain, memory, vec
from tests.contract.artifact_store_contract import entry
from tests.contract.lexical_index_contract import LexicalIndexContract
from tests.contract.metadata_store_contract import MetadataStoreContract
from tests.support.postgres import fresh_database


@pytest.fixture
def pg_store(postgres_url: str):
    from adapters.sql.ledger import SqlStore

    store = SqlStore(make_engine(fresh_database(postgres_url)))
    yield store
    store.close()


class TestPostgresMetadataStore(MetadataStoreContract):
    @pytest.fixture
    def store(self, pg_store):
        return pg_store


class TestPostgresArtifactStore(ArtifactStoreContract):
    @pytest.fixture
    def store(self, pg_store):
        return pg_store


class TestPostgresLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def store(self, pg_store):
        return pg_store


def test_the_postgres_index_uses_gin_indexes(pg_store) -> None:
    from sqlalchemy import text

    with pg_store._engine.connect() as conn:
        names = set(conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'lexical_docs'")).scalars())
    assert {"ix_lexical_docs_tsv", "ix_lexical_docs_trgm"} <= names


class TestPostgresOutbox(OutboxContract):
    @pytest.fixture
    def store(self, pg_store):
        return pg_store


def test_replicas_share_key_locks_and_never_claim_the_same_item(postgres_url: str) -> None:
    """Two stores on one database stand for two replicas: locks and claims hold across them."""
    import threading

    from adapters.sql.ledger import SqlStore

    url = fresh_database(postgres_url)
    one, two = SqlStore(make_engine(url)), SqlStore(make_engine(url))
    try:
        held = threading.Event()
        release = threading.Event()
        order: list[str] = []

        def first() -> None:
            with one.hold("art_x"):
                order.append("one in")
                held.set()
                release.wait(5)
                order.append("one out")

        t = threading.Thread(target=first)
        t.start()
        held.wait(5)
        waiter = threading.Thread(target=lambda: (two.hold("art_x").__enter__(), order.append("two in")))
        waiter.start()
        waiter.join(0.3)
        assert order == ["one in"]  # the other replica waits for the key
        release.set()
        t.join()
        waiter.join(5)
        assert order == ["one in", "one out", "two in"]

        for i in range(6):
            one.add_memory(memory(f"mem_{i}"), entry("store"), [vec(f"mem_{i}", "v1")])
        with one.claim(3) as first_items:
            with two.claim(10) as second_items:  # SKIP LOCKED: the other replica gets the rest
                assert {i.owner for i in first_items}.isdisjoint({i.owner for i in second_items})
                assert len(first_items) + len(second_items) == 6
        assert drain(one) == [] and one.oldest_queued() is None
    finally:
        one.close()
        two.close()
