"""The background graph's feed (domain/ports/graph_follow.py) on the in-memory fake, a SQLite file and a real
PostgreSQL server: the change log by sequence number, the durable cursor, and the one-holder lease."""

from __future__ import annotations

import pytest

from adapters.memory.scopes import InMemoryStore
from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.model import AuditEntry
from domain.ports.graph_follow import GraphFeed


def entry(action: str, collection: str, *ids: str) -> AuditEntry:
    return AuditEntry(action=action, collection=collection, item_ids=ids, actor="local", ts="2026-01-01T00:00:00Z",
                      detail={})


@pytest.fixture(params=["fake", "sqlite", "postgresql"])
def feed(request, tmp_path) -> GraphFeed:
    if request.param == "fake":
        return InMemoryStore()
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}" if request.param == "sqlite" else _postgres(request)
    return SqlStore(make_engine(url))


def _postgres(request) -> str:
    from tests.support.postgres import fresh_database

    return fresh_database(request.getfixturevalue("postgres_url"))


def test_the_change_log_by_number_the_cursor_and_the_lease(feed: GraphFeed) -> None:
    assert isinstance(feed, GraphFeed)
    assert (feed.last_change(), feed.changes_after(0, 10), feed.follow_state()) == (0, [], None)
    feed.append(entry("appended", "history", "c_turn_0", "c_turn_1"))  # type: ignore[attr-defined]
    feed.append(entry("create_entities", "graph", "Alice"))  # type: ignore[attr-defined]
    feed.append(entry("delete", "memory", "mem_1"))  # type: ignore[attr-defined]
    every = feed.changes_after(0, 10)
    assert [(c, i) for _, c, i in every] == [("turn", "c_turn_0"), ("turn", "c_turn_1"), ("graph", "Alice"),
                                              ("memory", "mem_1")]
    numbers = [n for n, _, _ in every]
    assert numbers == sorted(numbers) and feed.last_change() == numbers[-1]
    assert feed.changes_after(numbers[1], 1) == [every[2]]
    assert feed.changes_at([numbers[0], numbers[2], 999_999], ("turn", "memory")) == [every[0]]
    assert feed.count_after(numbers[0], ("memory", "turn")) == 2
    feed.save_follow_state({"seq": numbers[1], "holes": {"7": 1.5}})
    assert feed.follow_state() == {"seq": numbers[1], "holes": {"7": 1.5}}
    assert feed.claim_follow("a", 100.0, 10.0) and feed.claim_follow("a", 160.0, 50.0)  # held, renewed
    assert not feed.claim_follow("b", 200.0, 150.0)  # a's until 160
    assert feed.claim_follow("b", 260.0, 161.0) and not feed.claim_follow("a", 300.0, 200.0)  # lapsed: b's now
