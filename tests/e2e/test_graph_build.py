"""build_graph, graph_status, get_related and unmerge_entity over stdio with the official client, on a
real LoCoMo conversation (its first sessions) and memories: the offline extractor finds a person's
family, places and events with the turns that say so; a second build reads nothing unchanged; a deleted
memory takes what it said; a merge is undone; another caller's graph never shows any of it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.turns import load_conversation
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow
LOCOMO = Path(os.environ.get("MEMTROVE_LOCOMO_DIR", Path(__file__).resolve().parents[3] / "shared" / "locomo")
              ) / "conv-26.json"
ENV = {"MEMTROVE_TOOLSETS": "core,graph,zapomni,time",
       "MEMTROVE_GRAPH_BACKGROUND": "false"}  # build_graph alone builds here: its counts are asserted
SESSIONS = 4  # Caroline and Melanie's first four sessions: 70 turns


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    if not LOCOMO.exists():
        pytest.skip("the LoCoMo data is not beside this checkout")
    with blocking(stdio_session(tmp_path_factory.mktemp("graph-build") / "data", ENV)) as connected:
        yield connected


def session_time(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as ISO-8601."""
    from datetime import datetime

    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M:%SZ")


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def refused(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert result.is_error, result.content
    return result.structured_content


def test_a_conversation_becomes_a_graph_with_evidence(client: BlockingClient) -> None:
    conv = load_conversation(LOCOMO)
    data = conv.data
    turns = [(t["dia_id"], t["speaker"], t["text"], data[f"session_{s}_date_time"])
             for s in range(1, SESSIONS + 1) for t in data[f"session_{s}"]]
    ids = {}
    for index, (dia_id, speaker, text, when) in enumerate(turns):
        role = "user" if speaker == conv.speakers[0] else "assistant"
        ids[call(client, "history_append", conversation_id="locomo-26", role=role, content=f"{speaker}: {text}",
                 turn_index=index, ts=session_time(when))["id"]] = dia_id
    built = call(client, "build_graph", kinds=["turn"])
    assert built["state"] == "done" and built["progress"] == {"processed": len(turns), "total": len(turns)}
    assert built["errors"] == [] and built["extracted"]["relations"] > 0
    assert call(client, "graph_status")["build_id"] == built["build_id"]

    related = call(client, "get_related", entity="Melanie", depth=1, limit=50)["related"]
    names = {r["name"]: r for r in related}
    assert "Melanie's kids" in names and names["Melanie's kids"]["entity_type"] == "person"  # family
    edge = names["Melanie's kids"]["path"][0]
    assert edge["relation_type"] == "has_kid" and edge["evidence"], edge
    cited = edge["evidence"][0]
    assert cited["record_type"] == "turn" and ids[cited["record_id"]].startswith("D")  # a turn of the conversation
    assert "kids" in cited["excerpt"] and cited["mention"] == "Melanie"
    caroline = {r["name"]: r for r in call(client, "get_related", entity="Caroline", depth=2, limit=100)["related"]}
    assert any(r["entity_type"] == "event" for r in caroline.values())  # e.g. the LGBTQ support group
    assert caroline["Sweden"]["entity_type"] == "place" and "Caroline's grandma" in caroline  # place, family

    meant = call(client, "search_nodes", query="ran for a good cause")  # no name holds these words
    assert {"charity race", "Melanie"} <= {e["name"] for e in meant["entities"]}  # the turn found by meaning names them

    again = call(client, "build_graph", kinds=["turn"])  # nothing changed: nothing read
    assert again["progress"] == {"processed": 0, "total": 0} and again["records_unchanged"] == len(turns)


def test_a_deleted_memory_takes_what_it_said_and_a_merge_is_undone(client: BlockingClient) -> None:
    first = call(client, "memory_store", content="Priya Raman works at Northwind Traders in Lisbon.", type="fact",
                 confidence=0.9)["id"]
    call(client, "memory_store", content="Priya Raman visited Northwind-Traders in Porto.", type="fact",
         confidence=0.9)
    call(client, "memory_store", content="Priya Raman works for Northwind Traders Inc. now.", type="fact",
         confidence=0.9)
    built = call(client, "build_graph", kinds=["memory"])
    assert built["state"] == "done" and built["progress"]["total"] == 3
    merges = {(m["alias"], m["entity"]): m for m in call(client, "graph_status")["merges"]}
    assert merges[("Northwind-Traders", "Northwind Traders")]["method"] == "normalized"
    assert merges[("Northwind Traders Inc", "Northwind Traders")]["method"] == "fuzzy"
    graph = call(client, "open_nodes", names=["Northwind Traders", "Northwind-Traders", "Priya Raman"])
    assert {e["name"] for e in graph["entities"]} == {"Northwind Traders", "Priya Raman"}  # merged: one entity
    assert {"from": "Priya Raman", "to": "Northwind Traders", "relationType": "work_for"} in graph["relations"]

    moved = call(client, "unmerge_entity", alias="Northwind Traders Inc", entity="Northwind Traders")
    assert moved["facts_moved"] >= 2  # its mention and the relation read under that name
    split = call(client, "open_nodes", names=["Northwind Traders", "Northwind Traders Inc"])
    assert {e["name"] for e in split["entities"]} == {"Northwind Traders", "Northwind Traders Inc"}
    assert {"from": "Priya Raman", "to": "Northwind Traders Inc", "relationType": "work_for"} in split["relations"]
    assert refused(client, "unmerge_entity", alias="Northwind Traders Inc", entity="Northwind Traders")["error"]
    call(client, "memory_delete", memory_id=first)
    call(client, "build_graph", kinds=["memory"])  # nothing read again is merged again
    assert len(call(client, "open_nodes", names=["Northwind Traders", "Northwind Traders Inc"])["entities"]) == 2
    left = call(client, "open_nodes", names=["Priya Raman", "Lisbon", "Porto"])
    assert {e["name"] for e in left["entities"]} == {"Priya Raman", "Porto"}  # Lisbon: only the deleted memory
    assert all(r["to"] != "Lisbon" for r in left["relations"])


def test_bad_input_is_named(client: BlockingClient) -> None:
    assert refused(client, "build_graph", kinds=["emails"])["field"] == "kinds"
    assert refused(client, "build_graph", since="last tuesday")["field"] == "since"
    assert refused(client, "graph_status", build_id="x" * 65)["field"] == "build_id"
    assert refused(client, "get_related", entity="Nobody at all")["error"] == "Entity not found: Nobody at all"


def test_the_llm_extractor_over_a_chat_api_its_failure_recorded(tmp_path: Path) -> None:
    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(api_key="sk-test") as api:
        env = {**ENV, "MEMTROVE_EXTRACTOR": "llm", "MEMTROVE_EXTRACTOR_MODEL": "gpt-test",
               "MEMTROVE_EXTRACTOR_BASE_URL": api.base_url, "MEMTROVE_EXTRACTOR_API_KEY": "sk-test"}
        with blocking(stdio_session(tmp_path / "data", env)) as llm:
            call(llm, "memory_store", content="Alice works with Bob at Acme.", type="fact", confidence=1.0)
            api.script(500, 500)
            failed = call(llm, "build_graph")
            assert failed["state"] == "failed" and len(failed["errors"]) == 1
            assert "HTTP 500: The server had an error" in failed["errors"][0]
            assert call(llm, "graph_status")["state"] == "failed"
            built = call(llm, "build_graph")  # the failed record was not marked read: read again
            assert built["state"] == "done" and built["progress"] == {"processed": 1, "total": 1}
            graph = call(llm, "open_nodes", names=["Alice"])
            assert graph["relations"] == [{"from": "Alice", "to": "Bob", "relationType": "related_to"},
                                          {"from": "Alice", "to": "Acme", "relationType": "related_to"}]


def test_a_deleted_document_takes_what_it_said(client: BlockingClient) -> None:
    made = call(client, "artifact_ingest", artifact_type="doc", source_system="wiki", source_id="kestrel",
                content="Tomasz Wierzbicki lives in Gdansk. He leads the Kestrel Project.")
    built = call(client, "build_graph", kinds=["artifact"])
    assert built["state"] == "done" and built["progress"]["total"] == 1
    cited = call(client, "get_related", entity="Tomasz Wierzbicki")["related"]
    assert {"Gdansk"} <= {r["name"] for r in cited}
    assert cited[0]["path"][0]["evidence"][0]["record_id"] == made["artifact_id"]
    call(client, "artifact_delete", artifact_id=made["artifact_id"])
    assert call(client, "open_nodes", names=["Tomasz Wierzbicki", "Gdansk"])["entities"] == []


def test_a_home_that_changed_is_the_latest_and_the_former_one_kept(client: BlockingClient) -> None:
    for text, when in (("Ilse Varga lives in Vienna.", "2021-03-01"), ("Ilse Varga lives in Graz.", "2023-09-01")):
        call(client, "memory_store", content=text, type="fact", confidence=0.9, valid_from=when)
    call(client, "build_graph", kinds=["memory"])
    now = {r["name"]: r for r in call(client, "get_related", entity="Ilse Varga")["related"]}
    assert "Graz" in now and "Vienna" not in now  # where she lives now
    every = {r["name"]: r for r in call(client, "get_related", entity="Ilse Varga", include_ended=True)["related"]}
    former = every["Vienna"]["path"][0]
    assert former["superseded_by"]["to"] == "Graz" and former["valid_to"] == "2023-09-01"  # Graz's valid_from
    assert "valid_to" not in every["Graz"]["path"][0]


MEETING = """# Platform sync, 12 March 2024

Attendees: Priya Nair, Tom Okafor, Lena Brandt.

## Decisions
We decided to move the billing launch to April. The team agreed to drop the legacy exporter.

## Progress
Tom shipped the invoice service last week. Lena completed the security review on Monday.

## Action items
Priya will draft the migration plan by Friday. Tom will schedule the load test next week.
"""


def test_events_of_meeting_notes_and_a_conversation_link_back(client: BlockingClient) -> None:
    notes = call(client, "artifact_ingest", artifact_type="doc", source_system="notes", source_id="sync-0312",
                 content=MEETING, ts="2024-03-12T10:00:00Z")["artifact_id"]
    call(client, "build_graph", kinds=["artifact"], source="notes")
    found = call(client, "event_search", query="who prepares the migration plan", kinds=["action"])["events"]
    plan = next(e for e in found if "migration plan" in e["summary"])
    assert plan["kind"] == "action" and "Priya" in plan["who"][0] and plan["date_text"] == "Friday"
    assert plan["source"]["record_id"] == notes and plan["source"]["chunk_index"] is None  # kept whole: no chunk
    assert plan["source"]["excerpt"] == "Priya will draft the migration plan by Friday."
    decided = call(client, "event_search", query="billing launch date", kinds=["decision"])["events"]
    assert decided[0]["summary"] == "We decided to move the billing launch to April."
    shipped = call(client, "timeline", entity="Tom Okafor", kinds=["milestone"])["events"]
    assert [e["summary"] for e in shipped] == ["Tom shipped the invoice service last week."]
    assert shipped[0]["date"] == "2024-03-05" and shipped[0]["dated_by"] == "text"  # a week before the meeting

    line = call(client, "timeline", conversation_id="locomo-26", limit=200)["events"]
    assert line and all(e["source"]["record_type"] == "turn" for e in line)
    assert [e["date"] for e in line] == sorted(e["date"] for e in line)
    went = next(e for e in line if "support group" in e["summary"] and "Caroline" in e["who"])
    assert went["kind"] == "milestone" and went["date"] == "2023-05-07"  # "yesterday", said on 8 May 2023
    bad = client.call("timeline", {"since": "bad"})
    assert bad.is_error and bad.structured_content["error"]["field"] == "since"
