"""The TokenStore contract on the in-memory fake, a SQLite file and a real PostgreSQL; the token use cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.memory_scopes import InMemoryStore
from adapters.sqlalchemy_ledger import SqlStore
from adapters.sqlalchemy_store import make_engine
from domain.access.principal import Principal
from domain.access.tokens import Authenticate, CreateToken, RevokeToken, token_hash
from domain.errors import NotFoundError
from domain.ports.identity import TokenInfo, TokenStore

ALICE = Principal("alice", teams=("eng", "ops"), org="acme", clearance="sensitive", projects=("web",))
BOB = Principal("bob")


class TokenStoreContract:
    def test_a_token_names_its_principal_until_revoked(self, store: TokenStore) -> None:
        assert isinstance(store, TokenStore)
        store.add_token(TokenInfo("tok_a", ALICE, "laptop", "2026-01-01T00:00:00Z"), "h" * 64)
        store.add_token(TokenInfo("tok_b", BOB, None, "2026-01-02T00:00:00Z"), "g" * 64)
        assert store.principal_for("h" * 64) == ALICE and store.principal_for("g" * 64) == BOB
        assert store.principal_for("x" * 64) is None
        assert store.revoke_token("tok_a", "2026-01-03T00:00:00Z")
        assert store.principal_for("h" * 64) is None  # at once
        assert not store.revoke_token("tok_a", "2026-01-04T00:00:00Z") and not store.revoke_token("tok_z", "x")
        assert [(i.token_id, i.principal, i.label, i.revoked_at) for i in store.list_tokens()] == [
            ("tok_a", ALICE, "laptop", "2026-01-03T00:00:00Z"), ("tok_b", BOB, None, None)]

    def test_the_use_cases_keep_no_secret(self, store: TokenStore) -> None:
        issued = CreateToken(store)(ALICE, "ci")
        other = CreateToken(store)(ALICE)
        assert issued.secret != other.secret and issued.secret.startswith("mt_")
        assert Authenticate(store)(issued.secret) == ALICE and Authenticate(store)("mt_wrong") is None
        assert Authenticate(store)(token_hash(issued.secret)) is None  # the hash is no secret
        assert all(issued.secret not in repr(i) for i in store.list_tokens())
        RevokeToken(store)(issued.token_id)
        assert Authenticate(store)(issued.secret) is None and Authenticate(store)(other.secret) == ALICE
        with pytest.raises(NotFoundError):
            RevokeToken(store)(issued.token_id)


class TestInMemoryTokens(TokenStoreContract):
    @pytest.fixture
    def store(self):
        return InMemoryStore()


class TestSqliteTokens(TokenStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path):
        store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'store.sqlite3'}"))
        yield store
        store.close()

    def test_tokens_survive_a_reopened_store(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path / 'again.sqlite3'}"
        first = SqlStore(make_engine(url))
        issued = CreateToken(first)(ALICE)
        first.close()
        again = SqlStore(make_engine(url))
        try:
            assert Authenticate(again)(issued.secret) == ALICE
        finally:
            again.close()


class TestPostgresTokens(TokenStoreContract):
    @pytest.fixture
    def store(self, postgres_url: str):
        from tests.support.postgres import fresh_database

        store = SqlStore(make_engine(fresh_database(postgres_url)))
        yield store
        store.close()
