"""The DocumentStore contract against the in-memory fake, a SQLite file and a real PostgreSQL server.

The runs use SqlStore and InMemoryStore, composed with SqlDocuments / InMemoryDocuments here when they
do not inherit them yet; the document tables join the shared MetaData on import, so the store creates
them when it starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.memory.documents import InMemoryDocuments
from adapters.memory.scopes import InMemoryStore
from adapters.sql.documents import SqlDocuments
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from tests.contract.document_store_contract import DocumentStoreContract, version


def _with(mixin: type, store: type, name: str) -> type:
    """``store`` itself once it inherits ``mixin`` (the wiring), else the two composed here."""
    return store if issubclass(store, mixin) else type(name, (mixin, store), {"__module__": __name__})


SqlDocumentStore = _with(SqlDocuments, SqlStore, "SqlDocumentStore")
MemoryDocumentStore = _with(InMemoryDocuments, InMemoryStore, "MemoryDocumentStore")


class TestInMemoryDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def store(self):
        return MemoryDocumentStore()


class TestSqliteDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"

    @pytest.fixture
    def store(self, url: str):
        store = SqlDocumentStore(make_engine(url))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, url: str):
        return lambda: SqlDocumentStore(make_engine(url))


class TestPostgresDocumentStore(DocumentStoreContract):
    replicas = True

    @pytest.fixture
    def url(self, postgres_url: str) -> str:
        from tests.support.postgres import fresh_database

        return fresh_database(postgres_url)

    @pytest.fixture
    def store(self, url: str):
        store = SqlDocumentStore(make_engine(url))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, url: str):
        return lambda: SqlDocumentStore(make_engine(url))


def test_the_fake_keeps_the_other_stores_state() -> None:
    """The mixin's __init__ reaches the other bases' (DocumentStore, a Protocol, would end the chain)."""
    store = MemoryDocumentStore()
    assert store.ledger == {} and store.reads == {}
    assert store.add_version(version("it_a")).version_num == 1


def test_the_sql_tables_come_with_an_older_store(tmp_path: Path) -> None:
    """A database made before the documents existed gets their tables when the composed store starts."""
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = make_engine(url)
    from sqlalchemy import inspect

    with engine.begin() as conn:  # a store file of an older release: without the document tables
        from adapters.sql.base import metadata

        metadata.create_all(conn, tables=[t for name, t in metadata.tables.items()
                                          if name not in ("item_versions", "idempotency_keys")])
    assert "item_versions" not in inspect(engine).get_table_names()
    engine.dispose()
    store = SqlDocumentStore(make_engine(url))
    try:
        assert store.add_version(version("it_a")).version_num == 1
        assert store.claim_key("p1", "k", "memory_commit", "h", 1.0) is None
    finally:
        store.close()


def test_item_versions_of_a_store_from_before_projection_tracking_are_looked_at_once(tmp_path: Path) -> None:
    """item_versions without its ``projected`` column: the column is added, the old rows are pending."""
    from sqlalchemy import text

    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    store = SqlDocumentStore(make_engine(url))
    store.add_version(version("it_a", ts="2026-01-01T00:00:00Z"))
    store.mark_projected("p1", "it_a", 1)
    store.close()
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_item_versions_unprojected"))
        conn.execute(text("ALTER TABLE item_versions DROP COLUMN projected"))
    engine.dispose()
    store = SqlDocumentStore(make_engine(url))
    try:
        assert [(v.item_id, v.version_num) for v in store.unprojected(2e9)] == [("it_a", 1)]
        store.mark_projected("p1", "it_a", 1)
        assert store.unprojected(2e9) == [] and store.add_version(version("it_a")).version_num == 2
    finally:
        store.close()
