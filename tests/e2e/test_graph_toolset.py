"""The graph toolset over stdio and HTTP with the official client: the MCP reference memory server's
tools, inputs and results (its own test cases: duplicates return nothing, a missing entity is named,
deleting an entity takes its relations, search is any-case on name, type and observations, open_nodes
brings the relations touching the nodes), bad input named by field, and each caller's graph its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, run_cli, stdio_session

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "graph,zapomni"}
ALICE = {"name": "Alice", "entityType": "person", "observations": ["works at Acme Corp"]}
BOB = {"name": "Bob", "entityType": "person", "observations": ["likes programming"]}
ACME = {"name": "Acme Corp", "entityType": "organization", "observations": ["tech company"]}
CHARLIE = {"name": "Charlie", "entityType": "person", "observations": []}
RELATIONS = [{"from": "Alice", "to": "Acme Corp", "relationType": "works at"},
             {"from": "Bob", "to": "Acme Corp", "relationType": "works at"},
             {"from": "Alice", "to": "Bob", "relationType": "knows"},
             {"from": "Bob", "to": "Charlie", "relationType": "knows"}]


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    data = tmp_path_factory.mktemp(f"graph-{request.param}") / "data"
    if request.param == "stdio":
        with blocking(stdio_session(data, ENV)) as connected:
            yield connected
    else:
        with http_server(data, ENV) as server, blocking(http_session(server.mcp_url)) as connected:
            yield connected


def call(client: BlockingClient, tool: str, **arguments: Any) -> Any:
    """The structured result and the text (the result as JSON, indented by 2, as the reference's)."""
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    text = result.content[0].text
    if tool in ("search_nodes", "open_nodes") or tool == "read_graph" and "limit" not in arguments:
        assert json.loads(text) == result.structured_content
    return result.structured_content, text


def refused(client: BlockingClient, tool: str, **arguments: Any) -> str:
    result = client.call(tool, arguments)
    assert result.is_error, result.content
    return result.content[0].text


def test_the_reference_servers_behaviour(client: BlockingClient) -> None:
    made, text = call(client, "create_entities", entities=[ALICE, BOB, ACME, CHARLIE])
    assert made == {"entities": [ALICE, BOB, ACME, CHARLIE]} and json.loads(text) == [ALICE, BOB, ACME, CHARLIE]
    assert text.startswith("[\n  {\n    \"name\": \"Alice\"")  # JSON indented by 2, as the reference's
    assert call(client, "create_entities", entities=[ALICE])[0] == {"entities": []}  # a duplicate: nothing
    assert call(client, "create_relations", relations=RELATIONS)[0] == {"relations": RELATIONS}
    assert call(client, "create_relations", relations=RELATIONS[:1])[0] == {"relations": []}
    added, _ = call(client, "add_observations", observations=[
        {"entityName": "Alice", "contents": ["likes coffee", "works at Acme Corp"]}])
    assert added == {"results": [{"entityName": "Alice", "addedObservations": ["likes coffee"]}]}
    assert refused(client, "add_observations", observations=[
        {"entityName": "Bob", "contents": ["new"]}, {"entityName": "NonExistent", "contents": ["x"]}]) == \
        "Entity with name NonExistent not found"
    assert call(client, "open_nodes", names=["Bob"])[0]["entities"][0]["observations"] == ["likes programming"]

    found, _ = call(client, "search_nodes", query="Acme")
    assert [e["name"] for e in found["entities"]] == ["Alice", "Acme Corp"]  # her observation, its name
    assert found["relations"] == RELATIONS[:3]  # at least one end among the found
    assert [e["name"] for e in call(client, "search_nodes", query="ALICE")[0]["entities"]] == ["Alice"]
    # Nothing holds these words, nor anything near their meaning ("nothing like it" would find the
    # entities that like things: their observations are searched by words, "like" among them)
    assert call(client, "search_nodes", query="quantum zebra")[0] == {"entities": [], "relations": []}
    opened, _ = call(client, "open_nodes", names=["Charlie", "Nobody"])
    assert opened == {"entities": [CHARLIE], "relations": [RELATIONS[3]]}  # the incoming Bob -> Charlie

    related, _ = call(client, "get_related", entity="Alice", depth=2)  # spec 002's traversal, on this graph
    assert [(r["name"], r["depth"]) for r in related["related"]] == [("Acme Corp", 1), ("Bob", 1), ("Charlie", 2)]
    assert related["related"][2]["path"] == [{"from": r["from"], "to": r["to"], "relation_type": r["relationType"],
                                             "evidence": []}
                                             for r in (RELATIONS[2], RELATIONS[3])]
    assert refused(client, "get_related", entity="Nobody") == "Error: Entity not found: Nobody"

    page, _ = call(client, "read_graph", limit=2)
    rest, _ = call(client, "read_graph", limit=2, offset=page["next_offset"])
    assert [e["name"] for e in page["entities"] + rest["entities"]] == ["Alice", "Bob", "Acme Corp", "Charlie"]
    assert sorted(map(json.dumps, page["relations"] + rest["relations"])) == sorted(map(json.dumps, RELATIONS))
    assert rest["next_offset"] is None

    assert call(client, "delete_observations", deletions=[{"entityName": "Alice", "observations": ["likes coffee"]},
                                                           {"entityName": "Nobody", "observations": ["x"]}])[0] == {
        "success": True, "message": "Observations deleted successfully"}
    call(client, "delete_relations", relations=[RELATIONS[0]])
    call(client, "delete_entities", entityNames=["Bob"])  # and every relation from or to Bob
    whole, _ = call(client, "read_graph")
    assert [e["name"] for e in whole["entities"]] == ["Alice", "Acme Corp", "Charlie"] and whole["relations"] == []
    assert whole["entities"][0]["observations"] == ["works at Acme Corp"]
    call(client, "delete_entities", entityNames=["Alice", "Acme Corp", "Charlie"])


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("create_entities", {"entities": [{"name": "", "entityType": "x", "observations": []}]}, "entities[0].name"),
    ("create_entities", {"entities": [{"name": "A", "entityType": "x", "observations": "one"}]},
     "entities[0].observations"),
    ("create_relations", {"relations": [{"from": "A", "to": "B"}]}, "relations[0].relationType"),
    ("add_observations", {"observations": [{"entityName": "A", "contents": [1]}]}, "observations[0].contents[0]"),
    ("read_graph", {"limit": 0}, "limit"),
])
def test_bad_input_is_refused_naming_the_field_and_changes_nothing(client: BlockingClient, tool: str,
                                                                   arguments: dict[str, Any], field: str) -> None:
    result = client.call(tool, arguments)
    assert result.is_error and result.structured_content["error"]["field"] == field, result.content
    assert field.split("[")[0].lower() in result.content[0].text.lower()
    assert call(client, "read_graph")[0] == {"entities": [], "relations": []}


def test_each_caller_has_a_graph_of_its_own(tmp_path: Path) -> None:
    data = tmp_path / "data"
    secrets = {}
    for user in ("bob", "carol"):
        made = run_cli(["token", "create", "--user", user], data)
        assert made.returncode == 0, made.stderr
        secrets[user] = made.stdout.split("secret:")[1].split()[0]
    with http_server(data, ENV, token="owner-token") as server:
        with blocking(http_session(server.mcp_url, token=secrets["bob"])) as bob, \
                blocking(http_session(server.mcp_url, token=secrets["carol"])) as carol:
            call(bob, "create_entities", entities=[ALICE])
            assert call(carol, "read_graph")[0] == {"entities": [], "relations": []}
            assert call(carol, "search_nodes", query="alice")[0]["entities"] == []
            assert call(carol, "open_nodes", names=["Alice"])[0] == {"entities": [], "relations": []}
            assert refused(carol, "get_related", entity="Alice") == "Error: Entity not found: Alice"
            assert refused(carol, "add_observations", observations=[{"entityName": "Alice", "contents": ["x"]}]) == \
                "Entity with name Alice not found"
            assert call(carol, "create_entities", entities=[ALICE])[0] == {"entities": [ALICE]}  # hers, apart
            call(carol, "delete_entities", entityNames=["Alice"])
            assert call(bob, "open_nodes", names=["Alice"])[0]["entities"] == [ALICE]
