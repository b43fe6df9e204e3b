"""MEMTROVE_TOOLSETS: which tools a server lists, a bad name refused at start, and the toolsets sharing one store.

Spec 001's session memories and spec 002's notes live beside memtrove's artifacts: core
``hybrid_search`` finds them (filtered by session_id / memory_type, or source_system "zapomni"),
the cleanup of old session memories leaves core artifacts and memories alone, and re-embedding
carries session memories into the target profile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import scenario as core
from tests.e2e import sessions_scenario as sessions
from tests.e2e import zapomni_scenario as zapomni
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, run_cli, stdio_session

pytestmark = pytest.mark.slow

ALL = {"MEMTROVE_TOOLSETS": "all"}
DOCUMENT_TOOLS = {"memory_commit", "canonical_upsert", "canonical_get", "canonical_outline", "canonical_get_section",
                  "canonical_context_pack", "memory_restore", "project_search"}
CODE_TOOLS = {"index_codebase", "search_code", "get_indexing_status", "clear_index"}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    """One server offering every toolset, per transport."""
    root = tmp_path_factory.mktemp(f"e2e-toolsets-all-{request.param}")
    if request.param == "stdio":
        with blocking(stdio_session(root / "data", ALL, stderr_path=root / "stderr.log")) as connected:
            yield connected
    else:
        with http_server(root / "data", ALL, stderr_path=root / "stderr.log") as server, \
                blocking(http_session(server.mcp_url)) as connected:
            yield connected


def tool_names(client: BlockingClient) -> list[str]:
    return [t.name for t in client.run(sessions.list_all_tools)]


def hit_ids(found: dict[str, Any]) -> list[str]:
    return [r["id"] for r in found["results"]]


def belongs_to(hit_id: str, memory_id: str) -> bool:
    return hit_id == memory_id or hit_id.startswith(f"{memory_id}::chunk::")


# ------------------------------------------------------------------------------------ listings

def test_all_lists_every_tool_of_every_toolset(client: BlockingClient) -> None:
    names = tool_names(client)
    assert len(names) == len(set(names)), f"duplicate tool names: {sorted(n for n in names if names.count(n) > 1)}"
    bad = [n for n in names if not TOOL_NAME.match(n)]
    assert not bad, f"tool names outside ^[a-zA-Z0-9_-]{{1,64}}$: {bad}"
    for label, expected in (("core", core.EXPECTED_TOOLS), ("spec 001", sessions.SESSION_TOOLS),
                            ("spec 002", zapomni.ZAPOMNI_TOOLS), ("spec 004", DOCUMENT_TOOLS), ("code", CODE_TOOLS)):
        missing = expected - set(names)
        assert not missing, f"MEMTROVE_TOOLSETS=all misses {label} tools: {sorted(missing)}"
    assert len(core.EXPECTED_TOOLS | sessions.SESSION_TOOLS | zapomni.ZAPOMNI_TOOLS) == 16 + 28 + 7


def test_default_lists_exactly_the_core_tools(tmp_path: Path) -> None:
    with blocking(stdio_session(tmp_path / "data", stderr_path=tmp_path / "stderr.log")) as plain:
        names = tool_names(plain)
    assert sorted(names) == sorted(core.EXPECTED_TOOLS), names


def test_a_list_of_toolsets_lists_just_those(tmp_path: Path) -> None:
    with blocking(stdio_session(tmp_path / "data", {"MEMTROVE_TOOLSETS": "core,zapomni"},
                                stderr_path=tmp_path / "stderr.log")) as chosen:
        names = tool_names(chosen)
    assert sorted(names) == sorted(core.EXPECTED_TOOLS | zapomni.ZAPOMNI_TOOLS), names


def test_an_unknown_toolset_stops_the_server_with_one_line(tmp_path: Path) -> None:
    done = run_cli(["serve"], tmp_path / "data", {"MEMTROVE_TOOLSETS": "core,bogus"}, timeout=60.0)
    assert done.returncode != 0, done
    assert done.stdout == "", done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected a one-line error, got:\n{done.stderr}"
    assert "MEMTROVE_TOOLSETS" in lines[0] and "bogus" in lines[0], lines[0]


# ------------------------------------------------------------------------------- across toolsets

def test_session_report_is_found_by_hybrid_search_until_deleted(client: BlockingClient) -> None:
    session = "cross-toolset-4242"
    report = client.run(sessions.call, "store_report", {
        "agent_id": sessions.EXPLORER, "session_id": session, "content": sessions.PAYMENT_AUDIT,
        "session_iter": "v1", "task_code": "cross-check"})
    context = client.run(sessions.call, "store_session_context", {
        "session_id": session, "session_iter": "v1",
        "content": "Context: the retry storm against the card gateway needs a closer look."})
    memory_id = report["memory_id"]
    search = {"query": sessions.SECTION_QUERIES["Retry Storms"], "limit": 10,
              "filters": {"session_id": session, "memory_type": "report"}}
    found = client.run(core.call_ok, "hybrid_search", search)
    assert found["results"], f"hybrid_search does not find the session report: {found}"
    strays = [i for i in hit_ids(found) if not belongs_to(i, memory_id)]
    assert not strays, f"the filters let other items through (the context is {context['memory_id']}): {strays}"
    deleted = client.run(sessions.call, "delete_memory", {"memory_id": memory_id})
    assert deleted["memory_id"] == memory_id
    after = client.run(core.call_ok, "hybrid_search", search)
    assert not [i for i in hit_ids(after) if belongs_to(i, memory_id)], f"a deleted report is still found: {after}"
    unfiltered = client.run(core.call_ok, "hybrid_search", {"query": sessions.SECTION_QUERIES["Retry Storms"],
                                                            "limit": 50})
    assert not [i for i in hit_ids(unfiltered) if belongs_to(i, memory_id)], "found without filters after delete"
    gone = client.call("get_memory_by_id", {"memory_id": memory_id})
    sessions.refused(gone, "NotFoundError", what="get_memory_by_id after delete_memory")


def test_session_report_deleted_by_artifact_delete_leaves_the_session_tools(client: BlockingClient) -> None:
    """Stored through spec 001's tools, deleted through core's artifact_delete: gone from every view."""
    session = "cross-toolset-4343"
    report = client.run(sessions.call, "store_report", {
        "agent_id": sessions.EXPLORER, "session_id": session, "content": sessions.PAYMENT_AUDIT, "session_iter": "v1"})
    memory_id = report["memory_id"]
    query = {"query": sessions.SECTION_QUERIES["Retry Storms"], "session_id": session}
    before = client.run(sessions.call, "search_reports_specific_chunks", query)
    assert any(r["memory_id"] == memory_id for r in before["results"]), before
    client.run(core.call_ok, "artifact_delete", {"artifact_id": memory_id})
    after = client.run(sessions.call, "search_reports_specific_chunks", query)
    assert after["results"] == [], f"a report deleted by artifact_delete is still found: {after}"
    listed = client.run(sessions.call, "search_reports_full_documents", {"session_id": session})
    assert listed["results"] == [], listed
    stats = client.run(sessions.call, "get_session_stats", {"session_id": session})
    assert stats["total_memories"] == 0, stats
    sessions.refused(client.call("reconstruct_document", {"memory_id": memory_id}), "NotFoundError",
                     what="reconstruct_document after artifact_delete")


def test_zapomni_memory_is_found_by_search_memory_and_hybrid_search(client: BlockingClient) -> None:
    text = ("The Lofoten ferry from Bodø to Moskenes carries at most 120 cars and needs a reservation between "
            "June and August.")
    added = client.run(zapomni.add, text, {"tags": ["ferry"], "source": "cross-check"})
    memory_id = added["memory_id"]
    rival = client.run(sessions.call, "store_report", {
        "agent_id": sessions.ANALYST, "session_id": "cross-toolset-ferry", "session_iter": "v1",
        "content": "# Ferry Report\n\nThe ferry from Bodø to Moskenes needs a reservation for cars in summer.\n"})
    found = client.run(zapomni.search, "how many cars fit on the ferry to Moskenes", limit=5)
    assert memory_id in zapomni.ids(found), found
    hybrid = client.run(core.call_ok, "hybrid_search", {"query": "how many cars fit on the ferry to Moskenes",
                                                        "limit": 10, "filters": {"source_system": "zapomni"}})
    assert any(belongs_to(i, memory_id) for i in hit_ids(hybrid)), f"hybrid_search misses the note: {hybrid}"
    assert not any(belongs_to(i, rival["memory_id"]) for i in hit_ids(hybrid)), (
        f"source_system=zapomni let a session report through: {hit_ids(hybrid)}")


def test_cleanup_keeps_core_artifacts_and_memories(tmp_path: Path) -> None:
    with blocking(stdio_session(tmp_path / "data", ALL, stderr_path=tmp_path / "stderr.log")) as fresh:
        artifact = fresh.run(core.call_ok, "artifact_ingest", {
            "artifact_type": "note", "source_system": "manual",
            "content": "The Tromsø warehouse standby generator is tested on the first Monday of each month."})
        memory = fresh.run(core.store, "The user keeps the warehouse keys in the blue cabinet", "fact", 0.9)
        report = fresh.run(sessions.call, "store_report", {
            "agent_id": sessions.EXPLORER, "session_id": "cleanup-cross-1", "session_iter": "v1",
            "content": "# Generator Check\n\nThe standby generator started within nine seconds.\n"})
        preview = fresh.run(sessions.call, "cleanup_old_memories", {"days_old": 0})
        assert preview["dry_run"] is True and preview["memories_deleted"] == 1, (
            f"only the session report is a session memory: {preview}")
        done = fresh.run(sessions.call, "cleanup_old_memories", {"days_old": 0, "dry_run": False})
        assert done["memories_deleted"] == 1, done
        sessions.refused(fresh.call("get_memory_by_id", {"memory_id": report["memory_id"]}), "NotFoundError",
                         what="the session report after cleanup")
        kept = fresh.call("artifact_get", {"artifact_id": artifact["artifact_id"]})
        assert not kept.is_error, f"cleanup deleted a core artifact: {core.text_of(kept)}"
        listed = fresh.run(core.list_memories, limit=100)
        assert memory["id"] in core.ids(listed), "cleanup deleted a core memory"
        found = fresh.run(core.call_ok, "hybrid_search", {"query": "when is the Tromsø generator tested"})
        assert artifact["artifact_id"] in [r.get("artifact_id") for r in found["results"]], found


def test_reembed_to_local_carries_session_memories(tmp_path: Path) -> None:
    """Stored under an OpenAI-compatible profile, re-embedded into the local one, searched after the switch."""
    data = tmp_path / "data"
    with FakeOpenAIServer(default_dimensions=16) as fake:
        remote = {**ALL, "MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
                  "OPENAI_EMBED_MODEL": "fake-embed", "OPENAI_EMBED_DIMS": "16"}
        with blocking(stdio_session(data, remote, stderr_path=tmp_path / "remote.log")) as client:
            report = client.run(sessions.call, "store_report", {
                "agent_id": sessions.EXPLORER, "session_id": "reembed-1", "content": sessions.PAYMENT_AUDIT,
                "session_iter": "v1"})
            context = client.run(sessions.call, "store_session_context", {
                "session_id": "reembed-1", "session_iter": "v1", "content": "Re-embedding probe context."})
            note = client.run(zapomni.add, "The harbour crane at Kivik lifts at most 40 tonnes.")
            result = client.call("artifact_reembed", {"target_embedder": "local"})
            assert not result.is_error, f"artifact_reembed failed: {core.text_of(result)}"
            assert result.structured_content["complete"] is True, result.structured_content
    with blocking(stdio_session(data, ALL, stderr_path=tmp_path / "local.log")) as client:
        fine = client.run(sessions.call, "search_reports_specific_chunks",
                          {"query": sessions.SECTION_QUERIES["Retry Storms"], "session_id": "reembed-1", "limit": 3})
        assert fine["results"] and fine["results"][0]["memory_id"] == report["memory_id"], fine
        assert "## Retry Storms" in fine["results"][0]["header_path"], fine["results"][0]
        contexts = client.run(sessions.call, "search_session_context", {"session_id": "reembed-1"})
        assert sessions.result_ids(contexts) == [context["memory_id"]], contexts
        found = client.run(zapomni.search, "how heavy a load can the Kivik crane lift", limit=3)
        assert note["memory_id"] in zapomni.ids(found), found
