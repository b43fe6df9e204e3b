"""The TokenStore contract against the in-memory fake, a SQLite file and a real PostgreSQL server; how the
SQL table comes to a store made before it (or made in its earlier shapes), and how the tokens of an older
store made without --project lose their every-project access (least privilege) once."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from adapters.memory.scopes import InMemoryStore
from adapters.sql.base import metadata
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.access.principal import Principal
from domain.access.tokens import Authenticate, CreateToken, narrowed, token_hash
from tests.contract.token_store_contract import ALICE, BOB, TokenStoreContract


class TestInMemoryTokenStore(TokenStoreContract):
    @pytest.fixture
    def store(self):
        return InMemoryStore()


class TestSqlTokenStore(TokenStoreContract):
    """On a SQLite file and on PostgreSQL."""

    @pytest.fixture
    def url(self, sql_url: str) -> str:
        return sql_url

    @pytest.fixture
    def store(self, url: str):
        store = SqlStore(make_engine(url))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, url: str):
        return lambda: SqlStore(make_engine(url))


def test_the_store_file_holds_the_hash_and_never_the_secret(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = SqlStore(make_engine(f"sqlite:///{path}"))
    issued = CreateToken(store)(ALICE, "ci")
    store.close()  # the last connection closed: the WAL is folded into the file
    kept = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("store.sqlite3"))
    assert token_hash(issued.secret).encode() in kept and issued.secret.encode() not in kept


def test_the_token_table_comes_with_an_older_store(tmp_path: Path) -> None:
    """A database made before tokens existed gets their table when the store starts."""
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    engine = make_engine(url)
    with engine.begin() as conn:  # a store file of an older release: without api_tokens
        metadata.create_all(conn, tables=[t for name, t in metadata.tables.items() if name != "api_tokens"])
    assert "api_tokens" not in inspect(engine).get_table_names()
    engine.dispose()
    store = SqlStore(make_engine(url))
    try:
        issued = CreateToken(store)(BOB)
        assert Authenticate(store)(issued.secret) == BOB
    finally:
        store.close()


def test_tokens_of_the_earlier_one_column_shape_keep_working(sql_url: str) -> None:
    """api_tokens with one JSON ``principal`` column (its first shape): each field gets its column, every
    token still names its principal, a revoked one stays revoked, and new tokens can be added."""
    url = sql_url
    engine = make_engine(url)
    with engine.begin() as conn:
        metadata.create_all(conn, tables=[t for name, t in metadata.tables.items() if name != "api_tokens"])
        conn.execute(text("CREATE TABLE api_tokens (token_id VARCHAR(40) NOT NULL PRIMARY KEY, token_hash VARCHAR(64) "
                          "NOT NULL UNIQUE, principal TEXT NOT NULL, label VARCHAR(200), created_at VARCHAR(40) NOT "
                          "NULL, revoked_at VARCHAR(40))"))
        conn.execute(text("CREATE INDEX ix_api_tokens_hash ON api_tokens (token_hash)"))
        for token_id, secret, who, revoked in (("tok_000000000001", "mt_alice", ALICE, None),
                                               ("tok_000000000002", "mt_bob", BOB, "2026-01-02T00:00:00Z")):
            principal = {"user_id": who.user_id, "teams": list(who.teams), "org": who.org,
                         "clearance": who.clearance, "projects": None if who.projects is None else list(who.projects)}
            conn.execute(text("INSERT INTO api_tokens VALUES (:id, :hash, :principal, 'old', '2026-01-01T00:00:00Z', "
                              ":revoked)"), {"id": token_id, "hash": token_hash(secret),
                                             "principal": json.dumps(principal), "revoked": revoked})
    engine.dispose()
    for _ in range(2):  # the second start finds nothing left to do
        store = SqlStore(make_engine(url))
        try:
            assert Authenticate(store)("mt_alice") == ALICE and Authenticate(store)("mt_bob") is None
            # Bob's token had every project for want of --project: it has none now (least privilege).
            assert [(i.token_id, i.principal, i.revoked_at) for i in store.list_tokens()] == [
                ("tok_000000000001", ALICE, None),
                ("tok_000000000002", replace(BOB, projects=()), "2026-01-02T00:00:00Z")]
            columns = {c["name"] for c in inspect(store._engine).get_columns("api_tokens")}
            assert "principal" not in columns and {"user_id", "teams", "projects"} <= columns
        finally:
            store.close()
    store = SqlStore(make_engine(url))
    try:
        assert Authenticate(store)(CreateToken(store)(BOB).secret) == BOB
    finally:
        store.close()


OLD_TOKENS = ("CREATE TABLE api_tokens (token_id VARCHAR(40) NOT NULL PRIMARY KEY, token_hash VARCHAR(64) NOT NULL "
              "UNIQUE, user_id VARCHAR(100) NOT NULL, teams TEXT NOT NULL, org VARCHAR(100), clearance VARCHAR(20) "
              "NOT NULL, projects TEXT, label VARCHAR(200), created_at VARCHAR(40) NOT NULL, revoked_at VARCHAR(40))")


def test_tokens_made_without_a_project_reach_none_after_the_upgrade_once(sql_url: str) -> None:
    """A store of the release before least privilege: its tokens made without --project (projects NULL: every
    project) reach none from the upgrade on, marked as narrowed (memtrove doctor names the live ones); tokens
    with projects keep them; a token given every project after the upgrade keeps it across restarts."""
    engine = make_engine(sql_url)
    with engine.begin() as conn:
        metadata.create_all(conn, tables=[t for name, t in metadata.tables.items() if name != "api_tokens"])
        conn.execute(text(OLD_TOKENS))
        for n, user, projects, revoked in ((1, "bob", None, None), (2, "alice", '["web"]', None),
                                           (3, "carol", None, "2026-01-03T00:00:00Z"), (4, "dave", "[]", None)):
            conn.execute(text("INSERT INTO api_tokens VALUES (:id, :hash, :user, '[]', NULL, 'normal', :projects, "
                              "NULL, '2026-01-01T00:00:00Z', :revoked)"),
                         {"id": f"tok_00000000000{n}", "hash": token_hash(f"mt_{user}"), "user": user,
                          "projects": projects, "revoked": revoked})
    engine.dispose()
    store = SqlStore(make_engine(sql_url))
    try:
        assert Authenticate(store)("mt_bob") == Principal("bob", projects=())
        assert Authenticate(store)("mt_alice") == Principal("alice", projects=("web",))
        assert Authenticate(store)("mt_dave") == Principal("dave", projects=())
        listed = {i.token_id: i for i in store.list_tokens()}
        assert listed["tok_000000000001"].narrowed_at and listed["tok_000000000003"].narrowed_at  # revoked too
        assert listed["tok_000000000002"].narrowed_at is None and listed["tok_000000000004"].narrowed_at is None
        assert [i.token_id for i in narrowed(store.list_tokens())] == ["tok_000000000001"]  # the live one
        every = CreateToken(store)(Principal("erin", projects=None))
    finally:
        store.close()
    store = SqlStore(make_engine(sql_url))  # the upgrade ran once: what was made since stays as it was made
    try:
        assert Authenticate(store)(every.secret) == Principal("erin", projects=None)
        assert [i.token_id for i in narrowed(store.list_tokens())] == ["tok_000000000001"]
        assert store.set_token_projects("tok_000000000001", ("web",))
        assert narrowed(store.list_tokens()) == [] and Authenticate(store)("mt_bob").projects == ("web",)
    finally:
        store.close()
