"""Facts that change, over stdio with the official client: a preference changed three times is answered
with its current value, its history reads all three in order, a search as of an earlier date answers what
held then, and bad input is named without writing anything. Long histories do not push current memories
out of search, a memory valid from a future time does not hold yet, and a version that would begin before
the one it supersedes is refused (issue 41, items 2 and 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    with blocking(stdio_session(tmp_path_factory.mktemp("memory-time") / "data", {})) as connected:
        yield connected


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def refused(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert result.is_error, result.content
    return result.structured_content


def test_a_preference_changed_three_times(client: BlockingClient) -> None:
    said = [("The user prefers tea in the morning.", "2024-01-10T08:00:00Z"),
            ("The user prefers coffee in the morning.", "2024-03-01T08:00:00Z"),
            ("The user prefers green tea in the morning.", "2024-06-01T08:00:00Z")]
    ids: list[str] = []
    for content, since in said:
        made = call(client, "memory_store", content=content, type="preference", confidence=0.9, valid_from=since,
                    **({"supersedes": ids[-1]} if ids else {}))
        assert made.get("supersedes") == (ids[-1] if ids else None)
        ids.append(made["id"])
    now = call(client, "memory_search", query="what does the user drink in the morning", limit=5)
    assert [h["id"] for h in now["results"]] == [ids[2]]  # only what holds now
    hybrid = call(client, "hybrid_search", query="morning drink preference", include_memory=True, limit=10)
    assert ids[2] in [h["id"] for h in hybrid["results"]] and not {ids[0], ids[1]} & {h["id"] for h in hybrid["results"]}
    then = call(client, "memory_search", query="what does the user drink in the morning", as_of="2024-04-15")
    assert [h["id"] for h in then["results"]] == [ids[1]]  # coffee, in April
    history = call(client, "memory_history", memory_id=ids[1])
    assert [v["id"] for v in history["versions"]] == ids  # oldest first, whichever version is asked
    assert [v.get("valid_to") for v in history["versions"]] == [said[1][1], said[2][1], None]
    assert history["versions"][0]["superseded_by"] == ids[1]
    assert not any("score" in v for v in history["versions"])  # read, not ranked: no score of 0.0
    assert not any("score" in m for m in call(client, "memory_list", limit=100)["results"])

    again = refused(client, "memory_store", content="The user prefers water.", type="preference", confidence=0.9,
                    supersedes=ids[0])
    assert again["error"]["field"] == "supersedes" and "already superseded" in again["error"]["message"]
    missing = refused(client, "memory_store", content="x", type="fact", confidence=1, supersedes="mem_" + "0" * 32)
    assert missing["error"] == {"type": "not_found", "message": f"Memory mem_{'0' * 32} not found",
                                "field": "supersedes"}, missing
    assert refused(client, "memory_store", content="x", type="fact", confidence=1, valid_from="soon")["error"][
        "field"] == "valid_from"
    assert refused(client, "memory_search", query="tea", as_of="last May")["error"]["field"] == "as_of"
    assert len(call(client, "memory_list", limit=100)["results"]) == 3  # nothing written by the refusals


def test_a_date_in_the_query_ranks_that_time_first(client: BlockingClient) -> None:
    said = [("2024-01-12T19:00:00Z", "Ana: I cooked a big pot of lentil soup for the neighbours."),
            ("2024-03-08T19:00:00Z", "Ana: Dinner was simple, some soup and bread."),
            ("2024-05-20T19:00:00Z", "Ana: I cooked soup again, a spicy tomato soup this time, for the whole team.")]
    for index, (ts, content) in enumerate(said):
        call(client, "history_append", conversation_id="kitchen", role="user", content=content, turn_index=index, ts=ts)
    asked = {"include_history": True, "include_memory": False, "filters": {"conversation_id": "kitchen"}, "limit": 3}
    dated = call(client, "hybrid_search", query="What soup did Ana cook in March 2024?", **asked)["results"]
    assert dated[0]["id"] == "kitchen_turn_1" and "when" in dated[0]["signals"], dated
    relative = call(client, "hybrid_search", query="What soup did Ana cook last March?", **asked)["results"]
    assert relative[0]["id"] == "kitchen_turn_1"  # "last March" read against the newest turn (May 2024)
    plain = call(client, "hybrid_search", query="What soup did Ana cook?", **asked)["results"]
    assert plain[0]["id"] != "kitchen_turn_1" and not any("when" in h["signals"] for h in plain)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[BlockingClient]:
    with blocking(stdio_session(tmp_path / "data", {})) as connected:
        yield connected


def test_current_memories_with_long_histories_are_found_in_every_mode(fresh: BlockingClient) -> None:
    """4 chains of 160 versions: every search found none of the 4 current memories (their history filled
    the indexes' answers before the rest was dropped); memory_list showed them."""
    names = ("harbour", "orchard", "quarry", "mill")
    versions: list[list[str]] = []
    for version in range(161):
        row = []
        for chain, name in enumerate(names):
            made = call(fresh, "memory_store", content=f"The {name} ledger balance is {version * 10 + chain} euros "
                        f"after revision {version}.", type="fact", confidence=0.9,
                        valid_from=_day(version),
                        **({"supersedes": versions[-1][chain]} if versions else {}))
            row.append(made["id"])
        versions.append(row)
    current = set(versions[-1])
    listed = {h["id"] for h in call(fresh, "memory_list", limit=100)["results"]}
    assert current <= listed
    for mode in ("hybrid", "vector", "lexical"):
        found = [h["id"] for h in call(fresh, "memory_search", query="ledger", limit=10, mode=mode)["results"]]
        assert current <= set(found), (mode, found)
        assert set(found) <= current, mode  # nothing that ended
        then = {h["id"] for h in call(fresh, "memory_search", query="ledger balance", limit=10, mode=mode,
                                      as_of="2020-02-20T12:00:00Z")["results"]}
        assert then == set(versions[50]), mode  # as of then: version 50 of each chain (it began on day 50)


def _day(n: int) -> str:
    from datetime import datetime, timedelta, timezone

    return (datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(days=n)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_valid_time_is_checked(fresh: BlockingClient) -> None:
    """A chain A (2020) <- B (2022) <- C (2021) left B ending before it began, and as of 2021-06 both A and C
    held; a memory valid from 2030 was returned as current."""
    a = call(fresh, "memory_store", content="The rent is 900 euros a month.", type="fact", confidence=0.9,
             valid_from="2020-01-01")["id"]
    b = call(fresh, "memory_store", content="The rent is 950 euros a month.", type="fact", confidence=0.9,
             valid_from="2022-01-01", supersedes=a)["id"]
    error = refused(fresh, "memory_store", content="The rent is 920 euros a month.", type="fact", confidence=0.9,
                    valid_from="2021-01-01", supersedes=b)["error"]
    assert error["field"] == "valid_from" and "2021-01-01" in error["message"] and "2022-01-01" in error["message"]
    assert {h["id"] for h in call(fresh, "memory_list", limit=100)["results"]} == {a, b}  # nothing written
    assert call(fresh, "memory_get", memory_id=b).get("superseded_by") is None
    then = call(fresh, "memory_search", query="rent euros a month", as_of="2021-06-01")["results"]
    assert [h["id"] for h in then] == [a]
    assert [h["id"] for h in call(fresh, "memory_search", query="rent euros a month")["results"]] == [b]

    planned = call(fresh, "memory_store", content="The studio moves to Lisbon.", type="project", confidence=0.8,
                   valid_from="2030-01-01")["id"]
    for mode in ("hybrid", "vector", "lexical"):
        now = [h["id"] for h in call(fresh, "memory_search", query="studio moves Lisbon", mode=mode)["results"]]
        assert planned not in now, mode
        later = call(fresh, "memory_search", query="studio moves Lisbon", mode=mode, as_of="2030-06-01")["results"]
        assert [h["id"] for h in later][:1] == [planned], mode
    hybrid = call(fresh, "hybrid_search", query="studio moves Lisbon", include_memory=True, limit=10)["results"]
    assert planned not in {h["id"] for h in hybrid}
