"""The CodeStore contract against the in-memory fake, a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.memory.scopes import InMemoryStore
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from tests.contract.code_store_contract import CodeStoreContract


class TestInMemoryCodeStore(CodeStoreContract):
    @pytest.fixture
    def store(self):
        return InMemoryStore()


class TestSqliteCodeStore(CodeStoreContract):
    @pytest.fixture
    def url(self, tmp_path: Path) -> str:
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"

    @pytest.fixture
    def store(self, url: str):
        store = SqlStore(make_engine(url))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, url: str):
        return lambda: SqlStore(make_engine(url))


class TestPostgresCodeStore(CodeStoreContract):
    @pytest.fixture
    def url(self, postgres_url: str) -> str:
        from tests.support.postgres import fresh_database

        return fresh_database(postgres_url)

    @pytest.fixture
    def store(self, url: str):
        store = SqlStore(make_engine(url))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, url: str):
        return lambda: SqlStore(make_engine(url))
