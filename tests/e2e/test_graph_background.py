"""The background graph over MCP on real servers (SQLite, embedded Chroma, the offline spaCy extractor):

- memories and turns written, no build_graph call: once graph_status says the background is current, a
  search naming an entity finds them with ``graph`` among its signals, and build_graph reads nothing;
- a server killed (SIGKILL) while its background reads a burst of turns resumes on restart: every turn
  read once (build_graph then reads none), no evidence doubled;
- a ChatGPT export imported: its turns carry the export's times (history_get shows them), and a query
  naming that month finds them with ``when`` among its signals."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, run_cli, stdio_session, \
    stop_owner

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "core,zapomni", "MEMTROVE_GRAPH_BACKGROUND": "true"}  # opt-in for now (README)
DIMS = 32
FACTS = ["Priya Raman leads the Falcon project at Northwind.", "Tomasz Wiśniewski moved to Lisbon in March.",
         "The Falcon project ships its first release in June."]
SAID = ["Priya: I spent the weekend sailing near Cascais with Tomasz.", "Tomasz: Northwind finally approved the budget.",
        "Priya: My sister Anika starts at Northwind next month.", "Tomasz: Let's grab dinner at Ramiro after that."]


@pytest.fixture(scope="module")
def fake_embedder() -> Iterator[dict[str, str]]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        yield {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS)}


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def current(client: BlockingClient, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = call(client, "graph_status")
        if status["background"]["current"]:
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.3)


def test_written_records_are_found_by_the_graph_without_build_graph(tmp_path: Path,
                                                                  fake_embedder: dict[str, str]) -> None:
    with blocking(stdio_session(tmp_path / "data", {**ENV, **fake_embedder})) as client:
        ids = [call(client, "memory_store", content=fact, type="fact", confidence=1.0)["id"] for fact in FACTS]
        for index, text in enumerate(SAID):
            call(client, "history_append", conversation_id="weekend", role="user", content=text, turn_index=index)
        status = current(client)
        assert status["state"] == "none" and status["background"]["behind"] == 0, status  # no build_graph call
        found = call(client, "hybrid_search", query="What is going on with Northwind?", include_memory=True,
                     include_history=True, limit=10)["results"]
        by_graph = {h["id"] for h in found if "graph" in h["signals"]}
        assert {ids[0], "weekend_turn_1", "weekend_turn_2"} <= by_graph, found
        build = call(client, "build_graph", kinds=["memory", "turn"])
        assert build["progress"]["processed"] == 0 and build["records_unchanged"] == 7, build  # the background did it
        call(client, "memory_delete", memory_id=ids[0])
        current(client)
        again = call(client, "hybrid_search", query="Who leads the Falcon project?", include_memory=True, limit=10)
        assert ids[0] not in {h["id"] for h in again["results"]}


def http_call(server: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    async def run(client: Any) -> Any:
        return await client.call_tool(tool, arguments)

    with blocking(http_session(server.mcp_url)) as client:
        result = client.run(run)
    assert not result.is_error, result.content
    return result.structured_content


def test_a_kill_during_background_extraction_resumes_with_nothing_missed_or_doubled(
        tmp_path: Path, fake_embedder: dict[str, str]) -> None:
    data = tmp_path / "data"
    turns = [f"{name}: I met {other} at the {place} market on Saturday and we talked about {topic}."
             for name, other, place, topic in (
                 (n, o, p, t) for n in ("Priya", "Tomasz", "Anika") for o in ("Lena", "Marco", "Yusuf", "Ines")
                 for p in ("Alfama", "Belem", "Graca", "Baixa", "Chiado") for t in ("sailing", "the budget", "music"))]
    with http_server(data, {**ENV, **fake_embedder}, timeout=240) as server:
        async def write(client: Any) -> None:
            for index, text in enumerate(turns):
                result = await client.call_tool("history_append", {"conversation_id": "market", "role": "user",
                                                                   "content": text, "turn_index": index})
                assert not result.is_error, result.content

        with blocking(http_session(server.mcp_url)) as client:
            client.run(write)
        behind = http_call(server, "graph_status")["background"]["behind"]
        assert behind > 0  # still reading the burst
        server.process.kill()  # SIGKILL, mid-extraction
        server.process.wait(timeout=10)
    with sqlite3.connect(data / "memtrove.sqlite3") as db:
        before = db.execute("SELECT count(*) FROM graph_sources").fetchone()[0]
    assert before < len(turns)  # the kill came before the background was done
    with http_server(data, {**ENV, **fake_embedder}, timeout=240) as server:
        deadline = time.monotonic() + 300
        while not (status := http_call(server, "graph_status"))["background"]["current"]:
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
        build = http_call(server, "build_graph", kinds=["turn"])
        assert build["progress"]["processed"] == 0 and build["records_unchanged"] == len(turns), build
    with sqlite3.connect(data / "memtrove.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM graph_sources").fetchone()[0] == len(turns)
        doubled = db.execute("SELECT origin_id, fact_kind, fact_id, mention, count(*) FROM graph_evidence "
                             "GROUP BY origin_kind, origin_id, part, fact_kind, fact_id, mention "
                             "HAVING count(*) > 1").fetchall()
        assert doubled == []
        names = [n for (n,) in db.execute("SELECT name FROM graph_entities WHERE owner = 'local'")]
        assert len(names) == len(set(names)) and {"Priya", "Tomasz", "Anika"} <= set(names)


EXPORT = [{"id": "c0ffee00-0000-4000-8000-000000000001", "title": "Kayak trip", "create_time": 1615888800.0,
           "current_node": "m2", "mapping": {
               "root": {"id": "root", "message": None, "parent": None, "children": ["m1"]},
               "m1": {"id": "m1", "parent": "root", "children": ["m2"], "message": {
                   "id": "m1", "author": {"role": "user"}, "create_time": 1615888800.0,  # 2021-03-16T10:00:00Z
                   "content": {"content_type": "text", "parts": ["I paddled my new kayak around the lake today."]}}},
               "m2": {"id": "m2", "parent": "m1", "children": [], "message": {
                   "id": "m2", "author": {"role": "assistant"}, "create_time": 1615888860.0,
                   "content": {"content_type": "text", "parts": ["Sounds lovely! How did the kayak handle?"]}}}}},
          {"id": "c0ffee00-0000-4000-8000-000000000002", "title": "Bread", "create_time": 1655200800.0,
           "current_node": "n1", "mapping": {
               "root": {"id": "root", "message": None, "parent": None, "children": ["n1"]},
               "n1": {"id": "n1", "parent": "root", "children": [], "message": {
                   "id": "n1", "author": {"role": "user"}, "create_time": 1655200800.0,  # 2022-06-14
                   "content": {"content_type": "text", "parts": ["My kayak needs a new paddle, and I baked bread."]}}}}}]


def test_an_imported_chat_export_keeps_its_times_and_a_date_query_finds_them(
        tmp_path: Path, fake_embedder: dict[str, str]) -> None:
    data, export = tmp_path / "data", tmp_path / "conversations.json"
    export.write_text(json.dumps(EXPORT), encoding="utf-8")
    env = {**ENV, **fake_embedder, "MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "60"}
    try:
        done = run_cli(["import", "--from", "chatgpt", str(export)], data, env, timeout=180)
        assert done.returncode == 0, done.stderr
        with blocking(stdio_session(data, env)) as client:
            kayak = call(client, "history_get", conversation_id=f"chatgpt-{EXPORT[0]['id']}", limit=10)["turns"]
            assert [(t["content"][:14], t["ts"]) for t in kayak] == [
                ("Title: Kayak t", "2021-03-16T10:00:00Z"), ("I paddled my n", "2021-03-16T10:00:00Z"),
                ("Sounds lovely!", "2021-03-16T10:01:00Z")], kayak
            found = call(client, "hybrid_search", query="what did I do with the kayak in March 2021?",
                         include_history=True, include_memory=False, limit=5)["results"]
            march = {f"chatgpt-{EXPORT[0]['id']}_turn_{i}" for i in range(3)}  # its title and its two messages
            dated = [h["id"] for h in found if "when" in h["signals"]]
            assert set(dated) == march and {h["id"] for h in found[:3]} == march, found  # the 2022 turn: no 'when'
            assert found[3]["id"] == f"chatgpt-{EXPORT[1]['id']}_turn_1", found
    finally:
        stop_owner(data)
