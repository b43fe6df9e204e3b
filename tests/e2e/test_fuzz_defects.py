"""The defects a fuzzing run of the core tools found, over stdio and HTTP with every toolset on:

1. A string that looks like JSON (``{}``, ``[1]``, ``"x"``, ``1e5``, ``null``, ``true``) reaches every
   string parameter of every tool as sent: never refused as "not a string", and read back byte-exact
   wherever the tool stores or echoes it.
2. A write nobody could read is refused naming the field (above the writer's clearance with only the
   writer as reader: ``sensitivity``; expired before it is written: ``ts``), in memories, turns and
   artifacts alike; a write up to a wider audience is accepted and says who can read it.
3. A privacy field that would do nothing given the others, or of the wrong type, is refused naming it.

Every refusal is checked to leave every table of the store as it was."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.support.store_state import wait_until_settled
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, stdio_session

pytestmark = pytest.mark.slow

ENV = {"MEMTROVE_TOOLSETS": "all", "MEMTROVE_LOCAL_CLEARANCE": "sensitive"}
JSON_LOOKING = ["{}", "[1]", '"x"', "1e5", "null", "true", '{"k": "v"}', "[1,2]"]
MEM_ID = "mem_" + "0" * 32
ART_ID = "art_" + "0" * 32
_SESSION = {"session_id": "s-json", "session_iter": "v1", "content": "Plain note."}
_AGENT = {"agent_id": "agent-json", "session_id": "s-json", "content": "Plain note."}

# Valid arguments for every tool with a string parameter; each string parameter is replaced in turn.
BASES: dict[str, dict[str, Any]] = {
    "memory_store": {"content": "Plain memory.", "type": "fact", "confidence": 0.5},
    "memory_search": {"query": "plain"}, "memory_list": {}, "memory_delete": {"memory_id": MEM_ID},
    "memory_get": {"memory_id": MEM_ID}, "memory_update": {"memory_id": MEM_ID, "content": "Plain edit."},
    "history_append": {"conversation_id": "c-json", "role": "user", "content": "Plain turn.", "turn_index": 0},
    "history_get": {"conversation_id": "c-json"},
    "artifact_ingest": {"artifact_type": "note", "source_system": "fuzz", "content": "Plain note."},
    "artifact_search": {"query": "plain"}, "artifact_get": {"artifact_id": ART_ID},
    "artifact_delete": {"artifact_id": ART_ID}, "artifact_resolve": {"artifact_id": ART_ID},
    "hybrid_search": {"query": "plain"},
    "artifact_reembed": {"target_embedder": "openai-compatible", "artifact_id": ART_ID},
    "store_session_context": _SESSION, "store_input_prompt": _SESSION,
    "store_system_memory": _AGENT, "store_report": _AGENT, "store_report_observation": _AGENT,
    "store_working_memory": _AGENT,
    "store_knowledge_base": {"agent_id": "agent-json", "title": "Plain", "content": "Plain entry."},
    "search_session_context": {"session_id": "s-json"}, "search_input_prompts": {"session_id": "s-json"},
    "load_session_context_for_task": {"session_id": "s-json", "session_iter": "v1"},
    "expand_chunk_context": {"chunk_id": "chunk-json"}, "reconstruct_document": {"memory_id": MEM_ID},
    "get_memory_by_id": {"memory_id": MEM_ID}, "get_session_stats": {"session_id": "s-json"},
    "write_document_to_file": {"memory_id": MEM_ID, "output_path": "out.md"},
    "delete_memory": {"memory_id": MEM_ID},
    "add_memory": {"text": "Plain text."}, "search_memory": {"query": "plain"},
    "memory_commit": {"idempotencyKey": "k-json", "entries": [
        {"kind": "decision", "title": "Plain", "content": "Plain decision."}]},
    "canonical_upsert": {"canonicalKey": "k-json", "docClass": "app_spec", "title": "Plain",
                         "contentMarkdown": "# Plain\n\nText.", "idempotencyKey": "i-json"},
    "canonical_get": {"canonicalKey": "k-json"}, "canonical_outline": {"canonicalKey": "k-json"},
    "canonical_get_section": {"canonicalKey": "k-json", "sectionAnchor": "plain"},
    "canonical_context_pack": {"canonicalKey": "k-json", "goal": "plain"},
    "memory_restore": {}, "project_search": {"query": "plain"}, "artifact_list": {}, "store_export": {}, "conversation_list": {}, "search_nodes": {"query": "plain"}, "get_related": {"entity": "plain"},
    "memory_history": {"memory_id": MEM_ID}, "build_graph": {}, "graph_status": {},
    "unmerge_entity": {"alias": "plain", "entity": "plain"},
    "memory_changes": {"since": "2024-01-01"}, "event_search": {"query": "plain"}, "timeline": {},
    "search_system_memory": {}, "list_sessions": {},
    "index_codebase": {"path": "/nonexistent-memtrove-code"}, "search_code": {"query": "plain"},
    "get_indexing_status": {"path": "/nonexistent-memtrove-code"}, "clear_index": {"path": "/nonexistent-memtrove-code"},
    **{f"search_{kind}_{suffix}": {"query": "plain"} for kind in ("reports", "working_memory", "knowledge_base")
       for suffix in ("specific_chunks", "section_context", "full_documents")},
}
NOT_A_STRING = ("must be a string", "should be a valid string", "must be str")


def _read_memory(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    listed = client.call("memory_list", {"limit": 100}).structured_content["results"]
    return next(m for m in listed if m["id"] == made["id"])


def _read_turn(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    turns = client.call("history_get", {"conversation_id": made["conversation_id"]}).structured_content["turns"]
    return next(t for t in turns if t["turn_index"] == made["turn_index"])


def _read_artifact(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    got = client.call("artifact_get", {"artifact_id": made["artifact_id"], "include_content": True}).structured_content
    return {**got["metadata"], "content": got["content"]}


def _read_session_memory(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    found = client.call("get_memory_by_id", {"memory_id": made["memory_id"]}).structured_content["memory"]
    return {**found, "category": found["metadata"]["category"]}


def _read_canonical(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    return client.call("canonical_get", {"canonicalKey": made["canonicalKey"]}).structured_content


def _echo(client: BlockingClient, made: dict[str, Any]) -> dict[str, Any]:
    return made


# Where a successful call's string arguments can be read back: (reader, {argument: field read}).
READ_BACK: dict[str, tuple[Callable[[BlockingClient, dict[str, Any]], dict[str, Any]], dict[str, str]]] = {
    "memory_store": (_read_memory, {"content": "content", "conversation_id": "conversation_id"}),
    "history_append": (_read_turn, {"content": "content", "conversation_id": "conversation_id"}),
    "artifact_ingest": (_read_artifact, {k: k for k in ("content", "source_system", "source_id", "title", "author")}),
    "store_session_context": (_read_session_memory, {k: k for k in ("content", "session_id", "session_iter",
                                                                    "task_code")}),
    "store_system_memory": (_read_session_memory, {k: k for k in ("content", "agent_id", "session_id",
                                                                  "session_iter", "task_code")}),
    "store_knowledge_base": (_read_session_memory, {k: k for k in ("content", "agent_id", "title", "category")}),
    # (canonicalKey has a form of its own, lowercase words: '{}' is refused quoting it as sent.)
    "canonical_upsert": (_read_canonical, {"title": "title", "contentMarkdown": "contentMarkdown"}),
    "memory_search": (_echo, {"query": "query"}), "hybrid_search": (_echo, {"query": "query"}),
    "artifact_search": (_echo, {"query": "query"}),
}


def string_parameters(schema: dict[str, Any]) -> list[str]:
    """The parameters a tool's published schema lets be a free string (not an enum)."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        types = {prop.get("type"), *(option.get("type") for option in prop.get("anyOf", []))}
        if "string" in types and "enum" not in prop:
            found.append(name)
    return found


def table_counts(data: Path) -> dict[str, int]:
    """Rows of every table of the SQLite store (read-only, beside the running server)."""
    wait_until_settled(f"sqlite:///{data / 'memtrove.sqlite3'}")  # what earlier writes started in the background is done
    with closing(sqlite3.connect(f"file:{data / 'memtrove.sqlite3'}?mode=ro", uri=True, timeout=30)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%'")]
        return {name: db.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}


@pytest.fixture(scope="module", params=["stdio", "http"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, Path]]:
    root = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    data = root / "data"
    if request.param == "stdio":
        with blocking(stdio_session(data, ENV, stderr_path=root / "stderr.log")) as client:
            yield client, data
    else:
        with http_server(data, ENV, stderr_path=root / "stderr.log") as server, \
                blocking(http_session(server.mcp_url)) as client:
            yield client, data


def test_every_string_parameter_of_every_tool_takes_json_looking_text_as_sent(
        world: tuple[BlockingClient, Path]) -> None:
    client, _ = world
    tools = {t.name: t.input_schema for t in client.run(lambda c: c.list_tools()).tools}
    missing = [name for name, schema in tools.items() if string_parameters(schema) and name not in BASES]
    assert not missing, f"tools with string parameters and no base arguments here: {missing}"
    read_back, turn, refused = 0, 0, []
    for name, schema in tools.items():
        for parameter in string_parameters(schema):
            for value in JSON_LOOKING:
                arguments = {**BASES[name], parameter: value}
                turn += 1
                if name == "history_append":
                    arguments["turn_index"] = turn
                if parameter != "content" and isinstance(arguments.get("content"), str):
                    arguments["content"] += f" {turn}"  # not the same text again (ids may come from content)
                if name in ("canonical_upsert", "memory_commit"):
                    arguments["idempotencyKey"] = f"{arguments['idempotencyKey']}-{parameter}-{value}"
                got = client.call(name, arguments)
                error = (got.structured_content or {}).get("error") if got.is_error else None
                message = error.get("message", "") if isinstance(error, dict) else str(got.content)
                assert not (got.is_error and any(p in message for p in NOT_A_STRING)), (name, parameter, value, message)
                if name not in READ_BACK or parameter not in READ_BACK[name][1]:
                    continue
                if got.is_error:
                    refused.append((name, parameter, value, message))
                    continue
                reader, fields = READ_BACK[name]
                stored = reader(client, {**arguments, **(got.structured_content or {})})
                assert stored[fields[parameter]] == value, (name, parameter, value, stored)
                read_back += 1
    # Every stored or echoed parameter was read back with each value (none of these values is refused).
    assert not refused, refused
    assert read_back == len(JSON_LOOKING) * sum(
        len([p for p in fields if p in string_parameters(tools[name])]) for name, (_, fields) in READ_BACK.items()
        if name in tools)


WRITES = {
    "memory_store": {"content": "Refused memory zqrefused.", "type": "fact", "confidence": 0.5},
    "history_append": {"conversation_id": "c-refused", "role": "user", "content": "Refused turn zqrefused.",
                       "turn_index": 0},
    "artifact_ingest": {"artifact_type": "note", "source_system": "fuzz", "source_id": "refused",
                        "content": "Refused note zqrefused."},
}
# (id, extra arguments, the field named, words the message must hold); memories take no ts.
REFUSED = [
    ("above-clearance-only-me", {"sensitivity": "highly_sensitive"}, "sensitivity", ("clearance", "sensitive")),
    ("above-clearance-custom-only-me", {"sensitivity": "highly_sensitive", "visibility_scope": "custom",
                                        "visible_to": ["local"]}, "sensitivity", ("clearance",)),
    ("retention-days-without-custom", {"retention_days": 30}, "retention_days",
     ("retention_policy=custom", "retention_policy=forever")),
    ("retention-days-with-1y", {"retention_policy": "1y", "retention_days": 30}, "retention_days",
     ("retention_policy=1y",)),
    ("retention-days-string", {"retention_policy": "custom", "retention_days": "5"}, "retention_days", ("'5'",)),
    ("retention-days-string-without-custom", {"retention_days": "5"}, "retention_days", ("'5'",)),
    ("retention-days-zero", {"retention_policy": "custom", "retention_days": 0}, "retention_days", ("36500",)),
    ("visible-to-object", {"visible_to": {}}, "visible_to", ("list",)),
    ("visible-to-string", {"visible_to": "alice"}, "visible_to", ("list",)),
    ("visible-to-string-custom", {"visibility_scope": "custom", "visible_to": "alice"}, "visible_to", ("list",)),
    ("visible-to-without-custom", {"visible_to": ["alice"]}, "visible_to", ("visibility_scope=custom",)),
    ("visible-to-with-team", {"visibility_scope": "team", "visible_to": ["alice"]}, "visible_to",
     ("visibility_scope=team",)),
]
EXPIRED = [
    ("ts-1970-with-1y", {"ts": "1970-01-01T00:00:00Z", "retention_policy": "1y"}, "ts",
     ("ts 1970-01-01T00:00:00Z with retention_policy 1y expired at 1971-01-01",)),
    ("ts-2020-custom-7-days", {"ts": "2020-01-01T00:00:00Z", "retention_policy": "custom", "retention_days": 7},
     "ts", ("expired", "2020-01-08")),
]


@pytest.mark.parametrize("tool", list(WRITES))
@pytest.mark.parametrize("case", REFUSED + EXPIRED, ids=lambda case: case[0])
def test_a_write_nobody_could_read_or_with_a_field_that_does_nothing_is_refused_and_changes_nothing(
        world: tuple[BlockingClient, Path], tool: str, case: tuple[str, dict[str, Any], str, tuple[str, ...]]) -> None:
    client, data = world
    _, extra, field, words = case
    if tool == "memory_store" and "ts" in extra:
        pytest.skip("a memory's time is when it is stored: it cannot be written already expired")
    before = table_counts(data)
    got = client.call(tool, {**WRITES[tool], **extra})
    assert got.is_error, got.structured_content
    error = got.structured_content["error"]
    assert error["field"] == field and all(w in error["message"] for w in words), error
    assert table_counts(data) == before
    found = client.call("hybrid_search", {"query": "zqrefused", "mode": "lexical"}).structured_content["results"]
    assert found == []


@pytest.mark.parametrize("tool", list(WRITES))
def test_writing_up_for_a_wider_audience_is_kept_and_says_who_can_read_it(
        world: tuple[BlockingClient, Path], tool: str) -> None:
    client, _ = world
    arguments = {**WRITES[tool], "content": f"Written up zqup{tool.replace('_', '')}.", "source_id": "up",
                 "conversation_id": f"c-up-{tool}", "sensitivity": "highly_sensitive", "visibility_scope": "custom",
                 "visible_to": ["carol", "team:hr"], "retention_policy": "custom", "retention_days": 30}
    got = client.call(tool, {k: v for k, v in arguments.items() if k in WRITES[tool] or k not in
                             ("source_id", "conversation_id")})
    assert not got.is_error, got.structured_content
    body = got.structured_content
    assert body["you_can_read"] is False
    assert body["readable_by"] == "carol, team hr (cleared for highly_sensitive)"
    assert body["sensitivity"] == "highly_sensitive" and body["expires_at"].endswith("Z")
    assert "you cannot read it back" in got.content[0].text


@pytest.mark.parametrize("tool", list(WRITES))
def test_a_write_the_writer_can_read_says_nothing_more(world: tuple[BlockingClient, Path], tool: str) -> None:
    client, _ = world
    arguments = {**WRITES[tool], "content": f"Readable zqok{tool.replace('_', '')}.", "sensitivity": "sensitive",
                 "retention_policy": "custom", "retention_days": 30, "visibility_scope": "custom",
                 "visible_to": []}
    if tool == "artifact_ingest":
        arguments["source_id"] = "ok"
    if tool == "history_append":
        arguments["conversation_id"] = "c-ok"
    got = client.call(tool, arguments)
    assert not got.is_error, got.structured_content
    assert "you_can_read" not in got.structured_content and "expires_at" in got.structured_content
