"""Issue 42, "The graph and time", over stdio with the official client: build_graph's first answer names
its build (graph_status takes it) even when the call's budget ends before any progress; an entity the
graph tools write is found by meaning by search_nodes and by hybrid_search with include_memory, and not
once deleted; a graph built from documentation (Python's own when installed, a README) holds no markup,
no documentation sentence as a decision, and a node search for a name answers that name."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, stdio_session
from tests.unit.test_extraction_documents import MARKUP, PYTHON_DOCS, README

pytestmark = pytest.mark.slow
TOOLSETS = "core,graph,zapomni,time"
PAGES = ("howto/argparse.rst.txt", "howto/enum.rst.txt", "library/zipfile.rst.txt", "tutorial/errors.rst.txt")


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def settled(client: BlockingClient, build_id: str, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (status := call(client, "graph_status", build_id=build_id))["state"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.5)
    return status


@pytest.fixture(scope="module")
def hurried(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    """A server whose tool calls answer within a millisecond: a build is still loading its model then."""
    env = {"MEMTROVE_TOOLSETS": TOOLSETS, "MEMTROVE_GRAPH_BACKGROUND": "false", "MEMTROVE_CALL_BUDGET": "0.001"}
    with blocking(stdio_session(tmp_path_factory.mktemp("first-hour") / "data", env)) as client:
        yield client


def test_the_first_answer_of_build_graph_names_its_build(hurried: BlockingClient) -> None:
    call(hurried, "memory_store", content="Priya Nair will draft the migration plan by Friday.", type="fact",
         confidence=0.9)
    first = call(hurried, "build_graph")
    assert first["status"] == "running" and isinstance(first["build_id"], str) and first["build_id"], first
    assert call(hurried, "graph_status", build_id=first["build_id"])["build_id"] == first["build_id"]
    again = hurried.call("build_graph", {})
    assert again.is_error and first["build_id"] in again.content[0].text  # one build at a time, named
    done = settled(hurried, first["build_id"])
    assert done["state"] == "done" and done["progress"] == {"processed": 1, "total": 1}, done


def test_an_entity_written_by_the_tools_is_found_by_meaning_until_deleted(hurried: BlockingClient) -> None:
    call(hurried, "create_entities", entities=[
        {"name": "Ada_Quill", "entityType": "person", "observations": ["Keeps bees on the roof"]},
        {"name": "Tom_Vale", "entityType": "person", "observations": ["Plays chess on Sundays"]}])
    assert [e["name"] for e in call(hurried, "search_nodes", query="beekeeping")["entities"]] == ["Ada_Quill"]
    found = call(hurried, "hybrid_search", query="who keeps bees", include_memory=True)
    assert found["results"][0]["type"] == "entity" and found["results"][0]["name"] == "Ada_Quill", found
    assert "entities" in found["searched"]
    alone = call(hurried, "hybrid_search", query="who keeps bees")  # documents only: not the caller's memory
    assert all(r["type"] != "entity" for r in alone["results"])
    call(hurried, "add_observations", observations=[{"entityName": "Tom_Vale", "contents": ["Repairs old bicycles"]}])
    assert "Tom_Vale" in [e["name"] for e in call(hurried, "search_nodes", query="fixing bikes")["entities"]]

    call(hurried, "delete_entities", entityNames=["Ada_Quill"])
    assert "Ada_Quill" not in [e["name"] for e in call(hurried, "search_nodes", query="beekeeping")["entities"]]
    gone = call(hurried, "hybrid_search", query="who keeps bees", include_memory=True)["results"]
    assert all(r.get("name") != "Ada_Quill" for r in gone)


@pytest.fixture(scope="module")
def documented(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    env = {"MEMTROVE_TOOLSETS": TOOLSETS, "MEMTROVE_GRAPH_BACKGROUND": "false", "MEMTROVE_CALL_BUDGET": "900"}
    with blocking(stdio_session(tmp_path_factory.mktemp("first-hour-docs") / "data", env)) as client:
        call(client, "artifact_ingest", artifact_type="doc", source_system="docs", source_id="README.md",
             content=README)
        for page in PAGES if PYTHON_DOCS.exists() else ():
            call(client, "artifact_ingest", artifact_type="doc", source_system="docs", source_id=page,
                 content=(PYTHON_DOCS / page).read_text())
        yield client


def test_a_graph_of_documentation_holds_names_not_markup(documented: BlockingClient) -> None:
    built = call(documented, "build_graph", kinds=["artifact"])
    assert built["state"] == "done" and built["errors"] == [], built
    graph = call(documented, "read_graph")
    names = {e["name"]: e["entityType"] for e in graph["entities"]}
    assert names["Priya Raman"] == "person" and names["Acme Foundation"] == "organization"
    assert [n for n in names if MARKUP.search(n)] == []
    assert not {"= Perm", "Color'>", "Description |", "GiB", "Perm", "Color"} & set(names)
    assert [n for n, t in names.items() if t == "person" and " " not in n] == []  # no "Enum", "Python" people
    decisions = [e["summary"] for e in call(documented, "timeline", kinds=["decision"])["events"]]
    assert decisions == ["We decided to keep the CLI small."], decisions  # not "Before we conclude, ..."
    priya = [e["name"] for e in call(documented, "search_nodes", query="Priya")["entities"]]
    assert priya[0] == "Priya Raman" and not {"Python", "AttributeError", "abc"} & set(priya), priya
    assert not re.search(r"[<>|=`]", " ".join(o for e in graph["entities"] for o in e["observations"]))
