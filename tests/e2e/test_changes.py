"""memory_changes over stdio with the official client: writes in three rounds (memories stored, edited,
superseded and deleted; turns appended and replaced; a document ingested, replaced and deleted), then each
round's window lists exactly its changes, in order, filtered by kind, conversation, source or entity; and
another caller never sees a change of what it may not read."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "core,console,time,zapomni,graph"}


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def stamp() -> str:
    time.sleep(1.05)  # the log's times are to the microsecond; a second apart keeps the windows clear
    at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(0.05)
    return at


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    with blocking(stdio_session(tmp_path_factory.mktemp("changes") / "data", ENV)) as connected:
        yield connected


def test_each_window_lists_exactly_its_changes(client: BlockingClient) -> None:
    t0 = stamp()
    tea = call(client, "memory_store", content="Ana likes tea.", type="preference", confidence=0.9)["id"]
    call(client, "history_append", conversation_id="week", role="user", content="Ana moved to Porto.", turn_index=0)
    doc = call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="plan",
               content="Ana leads the Porto plan.")["artifact_id"]
    t1 = stamp()
    coffee = call(client, "memory_store", content="Ana likes coffee.", type="preference", confidence=0.9,
                  supersedes=tea)["id"]
    call(client, "memory_update", memory_id=coffee, content="Ana likes strong coffee.")
    call(client, "history_append", conversation_id="week", role="user", content="Ana moved to Braga.", turn_index=0)
    call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="plan",
         content="Ana leads the Braga plan.")
    t2 = stamp()
    call(client, "memory_delete", memory_id=coffee)
    call(client, "artifact_delete", artifact_id=doc)
    t3 = stamp()

    def seen(**arguments: Any) -> list[tuple[str, str, str]]:
        found = call(client, "memory_changes", **arguments)
        return [(c["kind"], c["collection"], c["id"]) for c in found["changes"]]

    turn = "week_turn_0"
    assert seen(**{"since": t0, "until": t1}) == [("added", "memory", tea), ("added", "turn", turn), ("added", "artifact", doc)]
    assert seen(**{"since": t1, "until": t2}) == [("added", "memory", coffee), ("superseded", "memory", tea),
                                              ("changed", "memory", coffee), ("changed", "turn", turn),
                                              ("changed", "artifact", doc)]
    assert seen(**{"since": t2, "until": t3}) == [("deleted", "memory", coffee), ("deleted", "artifact", doc)]
    assert seen(**{"since": t0, "kinds": ["deleted", "superseded"]}) == [
        ("superseded", "memory", tea), ("deleted", "memory", coffee), ("deleted", "artifact", doc)]
    assert [i for _, _, i in seen(**{"since": t0, "conversation_id": "week"})] == [turn, turn]
    assert seen(**{"since": t0, "source": "wiki", "kinds": ["added"]}) == [("added", "artifact", doc)]
    first = call(client, "memory_changes", **{"since": t0, "limit": 2})
    second = call(client, "memory_changes", **{"since": t0, "limit": 50, "cursor": first["next_cursor"]})
    assert [c["seq"] for c in first["changes"] + second["changes"]] == [
        c["seq"] for c in call(client, "memory_changes", **{"since": t0})["changes"]]
    bad = client.call("memory_changes", {"since": "last week"})
    assert bad.is_error and bad.structured_content["error"]["field"] == "since"


FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


@pytest.mark.skipif(not FAKETIME.exists(), reason="libfaketime is not installed (apt-get install faketime)")
def test_a_scripted_week_lists_exactly_its_writes(tmp_path: Path) -> None:
    """The server's clock is moved by libfaketime (read from a file on every call) through a week of
    writes, with one the day before and one the day after; the week, and each day, list exactly theirs."""
    clock = tmp_path / "clock"

    def at(day: int, hour: int) -> None:
        clock.write_text(f"@2027-01-{day:02d} {hour:02d}:00:00\n", encoding="utf-8")

    at(3, 20)  # Sunday before the week
    env = {**ENV, "LD_PRELOAD": str(FAKETIME), "FAKETIME_TIMESTAMP_FILE": str(clock), "FAKETIME_NO_CACHE": "1",
           "MEMTROVE_SHARED": "false"}
    with blocking(stdio_session(tmp_path / "data", env)) as client:
        before = call(client, "memory_store", content="The office closes for the holidays.", type="fact",
                      confidence=0.9)["id"]
        at(4, 9)  # Monday
        standup = call(client, "memory_store", content="Standup is at 9:00.", type="fact", confidence=0.9)["id"]
        call(client, "history_append", conversation_id="week", role="user", content="Kickoff today.", turn_index=0)
        at(5, 10)  # Tuesday
        plan = call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="plan",
                    content="Plan: ship the beta on Friday.")["artifact_id"]
        at(6, 11)  # Wednesday
        moved = call(client, "memory_store", content="Standup is at 9:30.", type="fact", confidence=0.9,
                     supersedes=standup)["id"]
        at(7, 12)  # Thursday
        call(client, "memory_update", memory_id=moved, content="Standup is at 9:30 in room 4.")
        call(client, "history_append", conversation_id="week", role="assistant", content="Noted.", turn_index=1)
        at(8, 13)  # Friday
        call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="plan",
             content="Plan: the beta shipped on Friday.")
        at(10, 18)  # Sunday (nothing on Saturday)
        call(client, "memory_delete", memory_id=moved)
        at(11, 9)  # the Monday after
        after = call(client, "memory_store", content="A new week starts.", type="fact", confidence=0.9)["id"]

        def seen(since: str, until: str) -> list[tuple[str, str, str]]:
            found = call(client, "memory_changes", since=since, until=until, limit=500)
            assert found.get("next_cursor") is None
            return [(c["kind"], c["collection"], c["id"]) for c in found["changes"]]

        days = {
            4: [("added", "memory", standup), ("added", "turn", "week_turn_0")],
            5: [("added", "artifact", plan)],
            6: [("added", "memory", moved), ("superseded", "memory", standup)],
            7: [("changed", "memory", moved), ("added", "turn", "week_turn_1")],
            8: [("changed", "artifact", plan)],
            9: [],
            10: [("deleted", "memory", moved)],
        }
        week = seen("2027-01-04T00:00:00Z", "2027-01-10T23:59:59Z")
        assert week == [change for day in sorted(days) for change in days[day]]
        for day, changes in days.items():
            assert seen(f"2027-01-{day:02d}T00:00:00Z", f"2027-01-{day:02d}T23:59:59Z") == changes, day
        assert seen("2027-01-03T00:00:00Z", "2027-01-03T23:59:59Z") == [("added", "memory", before)]
        assert seen("2027-01-11T00:00:00Z", "2027-01-11T23:59:59Z") == [("added", "memory", after)]
        times = [c["ts"] for c in call(client, "memory_changes", since="2027-01-04T00:00:00Z",
                                         until="2027-01-10T23:59:59Z")["changes"]]
        assert times[0].startswith("2027-01-04T09:00") and times[-1].startswith("2027-01-10T18:00")
