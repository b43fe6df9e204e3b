"""Facts that change, over stdio with the official client: a preference changed three times is answered
with its current value, its history reads all three in order, a search as of an earlier date answers what
held then, and bad input is named without writing anything."""

from __future__ import annotations

from collections.abc import Iterator
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
