"""The SQL store's contracts against a real PostgreSQL server: rows, artifacts, audit log, lexical index."""

from __future__ import annotations

import pytest

from adapters.sqlalchemy_store import make_engine
from tests.contract.artifact_store_contract import ArtifactStoreContract
from tests.contract.lexical_index_contract import LexicalIndexContract
from tests.contract.metadata_store_contract import MetadataStoreContract
from tests.support.postgres import fresh_database


@pytest.fixture
def pg_store(postgres_url: str):
    from adapters.sqlalchemy_ledger import SqlStore

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
