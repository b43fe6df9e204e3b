"""A store made before runs recorded their holder process (issue 41.13) opens with the column added:
its codebases read with no holder (judged by heartbeat alone), and new runs record theirs."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Column, MetaData, Table, insert

from adapters.sql.code import codebases
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from tests.contract.code_store_contract import codebase


def test_a_codebases_table_without_holders_is_upgraded(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    old = MetaData()
    Table("codebases", old, *[Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                              for c in codebases.columns if c.name != "holder"])
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(old.tables["codebases"]).values(
            id="cb_old", root="/src/old", owner="alice", acl='["u:alice"]', project=None, settings="{}",
            status="indexing", run="r0", heartbeat=100.0, counts="{}", skipped="[]", error=None,
            started_at="2026-01-01T00:00:00Z", finished_at=None))
    engine.dispose()

    store = SqlStore(make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}"))
    try:
        before = store.get_codebase("cb_old")
        assert (before.run, before.holder) == ("r0", "")
        assert store.begin_run(codebase("cb_old", run="r1", heartbeat=101.0, holder="h 1 1"), 50.0) is None
        assert store.begin_run(codebase("cb_old", run="r1", heartbeat=101.0, holder="h 1 1"), 50.0, replacing="r0")
        assert store.get_codebase("cb_old").holder == "h 1 1"
    finally:
        store.close()
