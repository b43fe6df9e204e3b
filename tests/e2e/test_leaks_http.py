"""The leak test, black-box over HTTP (the official client; tokens made by the real CLI): four callers in two teams
(one reaching every project, one a single project, the others, made without --project, none) write items of every kind (artifacts, memories and turns at every visibility and
sensitivity; a session memory and a Zapomni memory each; project documents in two projects) and each builds its
knowledge graph (the LLM extractor, against a local chat API told to make an entity of each marker); then 1,000
randomized calls of every read tool of every toolset, the graph's and the graph signal of hybrid_search included:
no answer (structured content or text) ever holds a word of an item its caller may not see, none holds another
project's, and every item a caller may see is reachable by it.

Every item's content carries a unique marker (``zq<writer><visibility><sensitivity><kind>``) beside a unique key
word (the same with ``kq``), which the queries use (so that no answer echoes a marker back); an answer leaks when it
holds the marker of an item its caller may not see, whatever its shape."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.ids import turn_id
from tests.e2e.leak_calls import SENSITIVITIES, random_call
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_LOCAL_CLEARANCE": "highly_sensitive", "MEMTROVE_TOOLSETS": "all",
       "MEMTROVE_SEARCH_WEIGHTS": json.dumps({"recall": {"lexical": 0.55, "semantic": 0.3, "exact": 0.1, "k": 10,
                                                         "contextual": 0.1, "graph": 0.2}})}
# who: (teams, org, clearance, projects): None every project (--project '*'), [] none (no --project)
PEOPLE: dict[str, tuple[list[str], str, str, list[str] | None]] = {
    "alice": (["eng"], "acme", "sensitive", None), "bob": (["eng"], "acme", "normal", []),
    "carol": (["ops"], "acme", "highly_sensitive", []), "dave": (["eng"], "acme", "sensitive", ["atlas"])}
VISIBILITIES = ("me", "team", "org", "custom")
CALLS = 1_000
WORD = re.compile(r"zq[a-z]+")


def create_token(data: Path, user: str, project_ids: dict[str, str]) -> str:
    teams, org, clearance, projects = PEOPLE[user]
    args = ["token", "create", "--user", user, "--org", org, "--clearance", clearance]
    args += [a for team in teams for a in ("--team", team)]
    args += ["--project", "*"] if projects is None else [a for p in projects for a in ("--project", project_ids[p])]
    done = run_cli(args, data, ENV)
    assert done.returncode == 0, done.stderr
    return re.search(r"secret:\s+(\S+)", done.stdout).group(1)  # type: ignore[union-attr]


def may_see(reader: str, item: dict[str, Any]) -> bool:
    teams, org, clearance, projects = PEOPLE[reader]
    if item.get("project"):
        return projects is None or item["project"] in projects
    order = list(SENSITIVITIES)
    if order.index(item["sensitivity"]) > order.index(clearance):
        return False
    writer, visibility = item["writer"], item["visibility"]
    return (reader == writer or (visibility == "team" and bool(set(teams) & set(PEOPLE[writer][0])))
            or (visibility == "org" and org == PEOPLE[writer][1])
            or (visibility == "custom" and (reader in item["visible_to"]
                                            or any(f"team:{t}" in item["visible_to"] for t in teams))))


def roots(tmp: Path, project: str) -> dict[str, Any]:
    """Client options declaring one root named ``project`` (the pre-2026 handshake asks for roots)."""
    from mcp.types import ListRootsResult, Root

    folder = tmp / project
    folder.mkdir(exist_ok=True)

    async def answer(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{folder}", name=project)])

    return {"list_roots_callback": answer, "mode": "legacy"}


def private(writer: str, kind: str, **more: Any) -> dict[str, Any]:
    return {"writer": writer, "visibility": "me", "sensitivity": "normal", "visible_to": [], "kind": kind,
            "word": f"zq{writer}{kind}", "key": f"kq{writer}{kind}", **more}


def tagged(item: dict[str, Any]) -> str:
    """An item's marker and key word, side by side, first in its content (so previews keep them whole)."""
    return f"{item['word']} {item['key']}"


WRITES = {"artifact_ingest": {"artifact_type": "note", "source_system": "wiki"},
          "memory_store": {"type": "fact", "confidence": 0.9},
          "history_append": {"conversation_id": "refused", "role": "user", "turn_index": 0}}


def write_items(client: Any, writer: str) -> list[dict[str, Any]]:
    items = []
    for visibility in VISIBILITIES:
        for sensitivity in SENSITIVITIES:
            access = {"sensitivity": sensitivity, "visibility_scope": visibility,
                      "visible_to": ["carol"] if visibility == "custom" else None}
            base = {"writer": writer, "visibility": visibility, "sensitivity": sensitivity,
                    "visible_to": access["visible_to"] or []}
            stem = f"{writer}{visibility}{sensitivity.replace('_', '')}"
            kinds = {kind: {**base, "kind": kind, "word": f"zq{stem}{kind}", "key": f"kq{stem}{kind}"}
                     for kind in ("artifact", "memory", "turn")}
            if visibility == "me" and not may_see(writer, base):  # nobody could read it: refused, not stored
                for tool in ("artifact_ingest", "memory_store", "history_append"):
                    got = client.call(tool, {**WRITES[tool], **access, "content": tagged(kinds["artifact"])})
                    assert got.is_error and got.structured_content["error"]["field"] == "sensitivity", got
                continue
            got = client.call("artifact_ingest", {"artifact_type": "note", "source_system": "wiki",
                                                  "source_id": f"{stem}-a", **access, "content":
                                                  f"{tagged(kinds['artifact'])}: lighthouse keeper notes, lamp serviced."})
            assert not got.is_error, got
            items.append({**kinds["artifact"], "id": got.structured_content["artifact_id"]})
            got = client.call("memory_store", {"content": f"{tagged(kinds['memory'])}: lighthouse keeper fact, lamp.",
                                               "type": "fact", "confidence": 0.9, **access})
            assert not got.is_error, got
            items.append({**kinds["memory"], "id": got.structured_content["id"]})
            conversation = f"{stem}-c"
            got = client.call("history_append", {"conversation_id": conversation, "role": "user", "turn_index": 0,
                                                 "content": f"{tagged(kinds['turn'])}: did the lighthouse keeper log it?",
                                                 **access})
            assert not got.is_error, got
            items.append({**kinds["turn"], "conversation": conversation})
    # One conversation with turns of different readers: a turn is never found by its neighbours' words
    # unless they share its readers (the check is in the reachability test: a key finds nothing else).
    for index, visibility in enumerate(("me", "team", "team")):
        turn = {**private(writer, "mixed" + "abc"[index]), "visibility": visibility, "conversation": f"{writer}-mixed",
                "index": index}
        got = client.call("history_append", {"conversation_id": turn["conversation"], "role": "user",
                                             "turn_index": index, "content": f"{tagged(turn)}: the keeper's log.",
                                             "visibility_scope": visibility})
        assert not got.is_error, got
        items.append(turn)
    session = private(writer, "session", session=f"s-{writer}")
    got = client.call("store_session_context", {"session_id": session["session"], "session_iter": "v1",
                                                "content": f"{tagged(session)} lighthouse plan\n\nKeeper notes."})
    assert not got.is_error, got
    items.append({**session, "id": got.structured_content["memory_id"]})
    zapomni = private(writer, "zapomni")
    got = client.call("add_memory", {"text": f"{tagged(zapomni)}: lighthouse keeper remembers."})
    assert not got.is_error, got
    items.append({**zapomni, "id": got.structured_content["memory_id"]})
    return items


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("leaks")
    data = tmp / "data"
    from adapters.files.projects import GitProjects

    # A project is named by its client's root (its git remote, else its path), as the server will name it.
    for name in ("atlas", "zeus"):
        (tmp / name).mkdir()
    project_ids = {name: GitProjects().project_of([f"file://{tmp / name}"]) for name in ("atlas", "zeus")}
    tokens = {user: create_token(data, user, project_ids) for user in PEOPLE}
    api = FakeOpenAIServer(names=WORD.pattern).start()  # each marker an entity of the graph
    env = {**ENV, "MEMTROVE_EXTRACTOR": "llm", "MEMTROVE_EXTRACTOR_MODEL": "m",
           "MEMTROVE_EXTRACTOR_BASE_URL": api.base_url}
    with http_server(data, env, token="the-owners-shared-token") as server:
        items: list[dict[str, Any]] = []
        for writer in PEOPLE:
            with blocking(http_session(server.mcp_url, tokens[writer])) as client:
                items += write_items(client, writer)
        for project in ("atlas", "zeus"):  # project documents: the project's, whoever wrote them
            with blocking(http_session(server.mcp_url, tokens["alice"], **roots(tmp, project))) as client:
                item = {"writer": "alice", "kind": "project", "project": project, "word": f"zq{project}doc",
                        "key": f"kq{project}doc"}
                got = client.call("canonical_upsert", {
                    "canonicalKey": f"{project}-spec", "docClass": "app_spec", "title": f"{project} spec",
                    "contentMarkdown": f"# Lighthouse {project}\n\nThe keeper spec {tagged(item)}.",
                    "idempotencyKey": f"{project}-1"})
                assert not got.is_error, got
                items.append(item)
        for reader in PEOPLE:  # each caller's graph, from what it may read
            with blocking(http_session(server.mcp_url, tokens[reader])) as client:
                built = client.call("build_graph", {})
                assert not built.is_error and built.structured_content["state"] == "done", built
        words = {item["word"]: item for item in items}
        assert len(words) == len(items) and not any(a != b and b.startswith(a) for a in words for b in words)
        yield {"server": server, "tokens": tokens, "items": items, "words": words, "tmp": tmp}
    api.stop()


def leaked(reader: str, answer: Any, words: dict[str, dict[str, Any]], asked: Any = None) -> list[str]:
    """The words in an answer (structured content and text) of items ``reader`` may not see (or unknown);
    a refusal may name what it was asked (``asked``: the arguments), e.g. "Entity not found: <name>"."""
    shown = {k: v for k, v in (answer.structured_content or {}).items() if k != "query"}  # the echoed query
    text = json.dumps(shown, ensure_ascii=False) + " ".join(
        getattr(c, "text", "") for c in answer.content)
    echoed = set(WORD.findall(json.dumps(asked))) if answer.is_error else set()
    return [w for w in WORD.findall(text) if (w not in words or not may_see(reader, words[w])) and w not in echoed]


def test_randomized_reads_of_every_read_tool_never_leak(world: dict[str, Any]) -> None:
    rng = random.Random(2026)
    items, words = world["items"], world["words"]
    calls = [(rng.choice(list(PEOPLE)), *random_call(rng, items, list(PEOPLE))) for _ in range(CALLS)]
    by_id = {item.get("id") or turn_id(item["conversation"], item.get("index", 0), item["writer"]): item
             for item in items if item.get("id") or item.get("conversation")}
    sessions: dict[tuple[str, str | None], Any] = {}
    counted: dict[str, int] = {}
    with_project = {}
    try:
        for reader, tool, arguments, project in calls:
            key = (reader, project)
            if key not in sessions:
                options = roots(world["tmp"], project) if project else {}
                portal = blocking(http_session(world["server"].mcp_url, world["tokens"][reader], **options))
                sessions[key] = (portal, portal.__enter__())
            answer = sessions[key][1].call(tool, arguments)
            assert not leaked(reader, answer, words, arguments), (reader, tool, arguments,
                                                                 leaked(reader, answer, words, arguments))
            counted[tool] = counted.get(tool, 0) + 1
            if project is not None:
                allowed = PEOPLE[reader][3] is None or project in PEOPLE[reader][3]
                with_project[(reader, project)] = allowed
                assert answer.is_error != allowed, (reader, tool, project, answer)
            if tool == "artifact_get" and arguments["artifact_id"] in {i.get("id") for i in items}:
                owner = next(i for i in items if i.get("id") == arguments["artifact_id"])
                assert answer.is_error != may_see(reader, owner), (reader, owner)
            if tool == "memory_changes":  # ids, no content: each one listed is of an item the reader may see
                assert not [c for c in answer.structured_content["changes"] if c["id"] in by_id
                            and not may_see(reader, by_id[c["id"]])], (reader, answer.structured_content)
            if tool == "get_stats" and not answer.is_error:
                mine = sum(1 for i in items if i["kind"] == "zapomni" and may_see(reader, i))
                assert answer.structured_content["statistics"]["total_memories"] == mine
    finally:
        for portal, _ in sessions.values():
            portal.__exit__(None, None, None)
    assert sum(counted.values()) == CALLS and len(counted) == 26, counted  # every read tool was called
    assert (("dave", "zeus") in with_project) and not with_project[("dave", "zeus")]
    # What the rule did shows in the metrics (behind the owner's token): denials of gets, withheld hits.
    metrics = httpx.get(world["server"].base_url + "/metrics", timeout=30,
                        headers={"Authorization": "Bearer the-owners-shared-token"}).text
    assert re.search(r'^memtrove_access_denials_total\{action="get",reason="not visible to the caller"\} [1-9]',
                     metrics, re.M)
    assert re.search(r'^memtrove_search_withheld_hits_total\{tool="hybrid_search"\} [1-9]', metrics, re.M)
    assert re.search(r'^memtrove_access_denials_total\{action="use",reason="not among the caller.s projects"\} [1-9]',
                     metrics, re.M)  # dave in project zeus


def test_every_item_a_caller_may_see_is_reachable_and_no_other(world: dict[str, Any]) -> None:
    items, words = world["items"], world["words"]
    for reader in PEOPLE:
        with blocking(http_session(world["server"].mcp_url, world["tokens"][reader])) as client:
            for item in items:
                got = client.call("hybrid_search", {"query": item["key"], "mode": "lexical", "limit": 5,
                                                    "include_memory": True, "include_history": True})
                assert not got.is_error, got
                assert not leaked(reader, got, words)
                found = item["word"] in json.dumps(got.structured_content)
                assert found == may_see(reader, item), (reader, item)
                if not found:  # keys are unique: nothing else is found by one (no neighbour's context)
                    assert got.structured_content["results"] == [], (reader, item, got.structured_content)
            # Its graph holds an entity for each item it may see (built from it) and none for the others; the
            # graph signal finds its memory by the entity a query names (the rank shows among the hit's signals).
            names = {item["word"]: item for item in items if item["kind"] != "project"}
            got = client.call("open_nodes", {"names": sorted(names)})
            assert {e["name"] for e in got.structured_content["entities"]} == {
                n for n, item in names.items() if may_see(reader, item)} and not leaked(reader, got, words), got
            own = next(i for i in items if i["writer"] == reader and i["kind"] == "memory")
            got = client.call("hybrid_search", {"query": own["word"], "limit": 5, "include_memory": True})
            hit = next(h for h in got.structured_content["results"] if own["word"] in json.dumps(h))
            assert "graph" in json.dumps(hit), hit
