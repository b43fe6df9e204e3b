"""The edges a reliability round found over MCP with every toolset on (issue 41, Low): integers past a
64-bit column, NUL in graph names and filters, ``until`` before ``since``, times a UTC offset pushes past
the documented range, errors naming no field or the wrong one, deletes of what is not there writing
log rows, and a page past the end of the graph. Each refusal names its field and changes nothing; a
project-restricted token's ``resources/list`` answers (empty), not an internal error."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import scenario
from tests.e2e.scenario import BadInput
from tests.support.store_state import wait_until_settled
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, run_cli, stdio_session

pytestmark = pytest.mark.slow

ENV = {"MEMTROVE_TOOLSETS": "all", "MEMTROVE_SHARED": "false"}
BIG = 2**63
RANGE = ("0001-01-01", "9999-12-31")

CASES = [
    BadInput("canonical-get-version-2^63", "canonical_get", {"canonicalKey": "k", "versionNum": BIG}, "versionNum"),
    BadInput("canonical-outline-version-2^64", "canonical_outline", {"canonicalKey": "k", "versionNum": 2**64},
             "versionNum"),
    BadInput("read-graph-offset-2^63", "read_graph", {"offset": BIG, "limit": 5}, "offset"),
    BadInput("entity-name-nul", "create_entities",
             {"entities": [{"name": "Ada\x00", "entityType": "person", "observations": []}]}, "entities[0].name"),
    BadInput("observation-nul", "create_entities",
             {"entities": [{"name": "Ada", "entityType": "person", "observations": ["a\x00b"]}]},
             "entities[0].observations[0]"),
    BadInput("relation-nul", "create_relations",
             {"relations": [{"from": "Ada", "to": "B\x00", "relationType": "knows"}]}, "relations[0].to"),
    BadInput("search-nodes-nul", "search_nodes", {"query": "Ada\x00"}, "query"),
    BadInput("artifact-list-source-nul", "artifact_list", {"source_system": "wiki\x00"}, "source_system"),
    BadInput("artifact-list-prefix-nul", "artifact_list", {"source_id_prefix": "/a\x00"}, "source_id_prefix"),
    BadInput("build-graph-source-nul", "build_graph", {"source": "wiki\x00"}, "source"),
    BadInput("timeline-until-before-since", "timeline", {"since": "2024-05-01", "until": "2024-01-01"}, "until"),
    BadInput("event-search-until-before-since", "event_search",
             {"query": "trip", "since": "2024-05-01", "until": "2024-01-01"}, "until"),
    BadInput("build-graph-until-before-since", "build_graph", {"since": "2024-05-01", "until": "2024-01-01"},
             "until"),
    BadInput("as-of-year-1-plus-1h", "memory_search", {"query": "tea", "as_of": "0001-01-01T00:00:00+01:00"},
             "as_of", mentions=RANGE),
    BadInput("until-year-9999-minus-1h", "timeline", {"until": "9999-12-31T23:59:59-01:00"}, "until",
             mentions=RANGE),
    BadInput("since-year-1-plus-1h", "memory_changes", {"since": "0001-01-01T00:00:00+01:00"}, "since",
             mentions=RANGE),
    BadInput("add-memory-nul", "add_memory", {"text": "tea\x00"}, "text"),
    BadInput("graph-status-unknown-build", "graph_status", {"build_id": "no-such-build"}, "build_id",
             kind="not_found"),
    *(BadInput(f"index-codebase-project-{name}", "index_codebase", {"path": "/tmp", "project": value}, "project")
      for name, value in (("list", ["x"]), ("int", 5), ("bool", True), ("empty", ""), ("nul", "a\x00"),
                          ("1mb", "p" * 1_000_000))),
    BadInput("clear-index-project-int", "clear_index", {"path": "/tmp", "project": 7}, "project"),
    BadInput("unmerge-unknown", "unmerge_entity", {"alias": "Bob", "entity": "Robert"}, "alias", kind="not_found"),
]


def zapomni_error(result: Any) -> dict[str, Any]:
    """The Zapomni toolset's error body ({status, error, field}) in the core's shape, for the shared check."""
    body = result.structured_content or {}
    return {"type": "not_found" if "not found" in body.get("error", "").lower() or "no merge" in
            body.get("error", "").lower() else "validation_error", "message": body.get("error", ""),
            "field": body.get("field")}


def table_counts(data: Path) -> dict[str, int]:
    wait_until_settled(f"sqlite:///{data / 'memtrove.sqlite3'}")  # what earlier writes started in the background is done
    with closing(sqlite3.connect(f"file:{data / 'memtrove.sqlite3'}?mode=ro", uri=True, timeout=30)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%'")]
        return {name: db.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in names}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, Path]]:
    root = tmp_path_factory.mktemp("edge-inputs")
    with blocking(stdio_session(root / "data", ENV, stderr_path=root / "stderr.log")) as client:
        client.run(scenario.seed)
        yield client, root / "data"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_refused_naming_the_field_and_nothing_changes(world: tuple[BlockingClient, Path], case: BadInput) -> None:
    client, data = world
    if case.tool not in ("add_memory", "graph_status", "unmerge_entity", "build_graph"):
        client.run(scenario.check_bad_input, case)
        return
    before = table_counts(data)
    got = client.call(case.tool, case.arguments)  # the Zapomni toolset's own error shape
    assert got.is_error, got.structured_content
    error = zapomni_error(got)
    assert error["field"] == case.field, got.structured_content
    assert error["type"] == case.kind, got.structured_content
    assert case.field.split(".")[0].lower() in error["message"].lower() or case.kind == "not_found", error
    assert "content" not in error["message"].lower(), error  # add_memory's field is text
    assert table_counts(data) == before


@pytest.mark.parametrize("tool, arguments", [
    ("memory_search", {"query": "tea", "as_of": "0001-01-01"}),
    ("memory_search", {"query": "tea", "as_of": "9999-12-31T23:59:59Z"}),
    ("timeline", {"since": "0001-01-01", "until": "9999-12-31"}),
    ("memory_changes", {"since": "0001-01-01T00:00:00Z"}),
    ("timeline", {"since": "0001-01-01T00:00:00-01:00"}),
])
def test_the_documented_bounds_are_accepted(world: tuple[BlockingClient, Path], tool: str,
                                            arguments: dict[str, Any]) -> None:
    client, _ = world
    got = client.call(tool, arguments)
    assert not got.is_error, got.structured_content


def test_deleting_graph_items_that_do_not_exist_writes_no_log_rows(world: tuple[BlockingClient, Path]) -> None:
    client, data = world
    before = table_counts(data)
    for tool, arguments in [("delete_entities", {"entityNames": ["Nobody-zq"]}),
                            ("delete_relations", {"relations": [{"from": "Nobody-zq", "to": "Noone-zq",
                                                                 "relationType": "knows"}]}),
                            ("delete_observations", {"deletions": [{"entityName": "Nobody-zq",
                                                                    "observations": ["never said"]}]})]:
        got = client.call(tool, arguments)
        assert not got.is_error, got.structured_content  # the reference server's answer: nothing to delete
    assert table_counts(data) == before
    # A delete that does remove something is still logged.
    assert not client.call("create_entities", {"entities": [{"name": "Gone-zq", "entityType": "person",
                                                             "observations": ["here"]}]}).is_error
    middle = table_counts(data)
    assert not client.call("delete_entities", {"entityNames": ["Gone-zq"]}).is_error
    after = table_counts(data)
    assert after["audit_log"] > middle["audit_log"], (middle, after)


def test_a_page_past_the_end_of_the_graph_is_empty(world: tuple[BlockingClient, Path]) -> None:
    client, _ = world
    assert not client.call("create_entities", {"entities": [{"name": "Page-zq", "entityType": "person",
                                                             "observations": []}]}).is_error
    assert not client.call("create_relations", {"relations": [{"from": "Loose-a-zq", "to": "Loose-b-zq",
                                                               "relationType": "knows"}]}).is_error
    whole = client.call("read_graph", {}).structured_content
    count = len(whole["entities"])
    last = client.call("read_graph", {"offset": 0, "limit": count}).structured_content
    assert any(r["from"] == "Loose-a-zq" for r in last["relations"]), last  # with the last page
    past = client.call("read_graph", {"offset": count + 3, "limit": 5}).structured_content
    assert past["entities"] == [] and past["relations"] == [], past


def test_a_project_restricted_token_lists_no_resources_instead_of_failing(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    data = tmp_path_factory.mktemp("edge-resources") / "data"
    env = {"MEMTROVE_TOOLSETS": "core,documents"}
    made = run_cli(["token", "create", "--user", "dana", "--project", "elsewhere"], data, env)
    assert made.returncode == 0, made.stderr
    secret = re.search(r"secret:\s+(\S+)", made.stdout).group(1)  # type: ignore[union-attr]
    with http_server(data, env, token="the-owners-token") as server:
        with blocking(http_session(server.mcp_url, "the-owners-token")) as owner:
            assert not owner.call("canonical_upsert", {
                "canonicalKey": "spec/one", "docClass": "app_spec", "title": "One", "idempotencyKey": "i-1",
                "contentMarkdown": "# One\n\nThe owner's document."}).is_error
            listed = owner.run(lambda c: c.list_resources())
            assert [r.name for r in listed.resources] == ["One"]
        with blocking(http_session(server.mcp_url, secret)) as dana:
            listed = dana.run(lambda c: c.list_resources())
            assert listed.resources == []
