"""Long ingests over MCP: progress notifications, a call that never outlives its budget, work that survives a kill.

A slow OpenAI-compatible fake stands in for a slow model: each embedding request answers after a
delay, so an ingest of a few hundred chunks takes longer than MEMTROVE_CALL_BUDGET (1 s here).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.scenario import call_ok
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import http_server, http_session

pytestmark = pytest.mark.slow

DOC = "\n\n".join(f"Section {i}. The lighthouse keeper logged storm number {i} and the ferry route "
                  f"changed on day {i}; cargo manifest {i} lists pallets, lanterns and rope." for i in range(260))
DOC += "\n\nThe final entry names the quokkafjord beacon, lit on the last night."


def slow_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32", "OPENAI_BATCH_SIZE": "16",
            "CHUNK_TARGET_TOKENS": "40", "CHUNK_OVERLAP_TOKENS": "8", "SINGLE_PIECE_MAX_TOKENS": "40",
            "MEMTROVE_CALL_BUDGET": "1", "MEMTROVE_SHARED": "false", **extra}


async def wait_committed(client: Any, art_id: str, timeout: float = 90.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view = await call_ok(client, "artifact_get", {"artifact_id": art_id})
        if view["status"] == "indexed":
            return view
        assert view["status"] == "indexing", view
        assert time.monotonic() < deadline, f"still {view} after {timeout} s"
        await asyncio.sleep(0.3)


async def chunks_known(client: Any, art_id: str, timeout: float = 60.0) -> int:
    """The chunk count of an ingest answered "indexing" while its chunks were still being cut."""
    deadline = time.monotonic() + timeout
    while not (view := await call_ok(client, "artifact_get", {"artifact_id": art_id})).get("chunks_total"):
        assert view["status"] == "indexing" and time.monotonic() < deadline, view
        await asyncio.sleep(0.05)
    return int(view["chunks_total"])


def found(hits: dict[str, Any], art_id: str) -> bool:
    return any(h.get("artifact_id") == art_id for h in hits["results"])


def test_a_long_ingest_reports_progress_answers_within_budget_and_completes(tmp_path: Path) -> None:
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.3) as fake:
        fake.script(*["slow"] * 12)
        with http_server(tmp_path / "data", slow_env(fake)) as server:
            async def scenario() -> None:
                async with http_session(server.mcp_url) as client:
                    progress: list[tuple[float, float | None]] = []

                    async def on_progress(done: float, total: float | None, _message: str | None) -> None:
                        progress.append((done, total))

                    result = await client.call_tool("artifact_ingest", {
                        "artifact_type": "doc", "source_system": "logbook", "source_id": "log-1", "content": DOC},
                        progress_callback=on_progress)
                    body = result.structured_content
                    assert not result.is_error and body["status"] == "indexing", body
                    art_id, total = body["artifact_id"], body["chunks_total"]
                    if total:  # the budget ran out while it embedded (on a busy machine, it may while it cuts)
                        assert total > 100 and 0 <= body["chunks_done"] < total
                        assert progress, "no progress notification arrived while the client waited"
                    else:
                        total = await chunks_known(client, art_id)
                    dones = [p for p, _ in progress]  # MCP: each above the last; none before the chunks are cut
                    assert dones == sorted(set(dones)) and {t for _, t in progress} <= {total}

                    view = await call_ok(client, "artifact_get", {"artifact_id": art_id})
                    assert view["status"] == "indexing" and view["chunks_total"] == total
                    # Found by its words while its vectors are made, and saying so.
                    hits = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    early = [h for h in hits["results"] if h.get("artifact_id") == art_id]
                    assert early and "quokkafjord" in early[0]["snippet"], hits
                    assert all(h["indexing"] is True and "semantic" not in h["signals"] for h in early), early
                    wide = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 1,
                                                                    "expand_neighbors": True})
                    assert wide["results"][0]["indexing"] and wide["results"][0]["neighbors"], wide
                    text = await client.call_tool("hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    assert "its meaning is still being indexed" in text.content[0].text

                    again = await call_ok(client, "artifact_ingest", {
                        "artifact_type": "doc", "source_system": "logbook", "source_id": "log-1", "content": DOC})
                    assert again["status"] == "indexing" and again["artifact_id"] == art_id  # not started twice

                    done = await wait_committed(client, art_id)
                    assert done["metadata"]["num_chunks"] == total
                    hits = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    assert found(hits, art_id)
                    assert not any(h.get("indexing") for h in hits["results"]), hits
                    full = await call_ok(client, "artifact_get", {"artifact_id": art_id, "include_content": True})
                    assert full["content"] == DOC
            asyncio.run(scenario())


def test_a_new_document_found_by_its_words_early_is_withdrawn_when_its_embedding_fails(tmp_path: Path) -> None:
    """Spec 000's rule holds for a document shown early: its embedding fails in the background, its words
    are withdrawn, and artifact_get says why."""
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.3) as fake:
        fake.script(*["slow"] * 8, *[401] * 200)  # its embedding fails after about 2.4 s
        with http_server(tmp_path / "data", slow_env(fake)) as server:
            async def scenario() -> None:
                async with http_session(server.mcp_url) as client:
                    body = await call_ok(client, "artifact_ingest", {
                        "artifact_type": "doc", "source_system": "logbook", "source_id": "log-3", "content": DOC})
                    assert body["status"] == "indexing", body
                    art_id = body["artifact_id"]
                    if not body["chunks_total"]:
                        await chunks_known(client, art_id)
                    words = {"query": "quokkafjord beacon", "limit": 5, "mode": "lexical"}
                    early = await call_ok(client, "hybrid_search", words)
                    if found(early, art_id):
                        assert all(h["indexing"] for h in early["results"] if h.get("artifact_id") == art_id)
                    else:  # only where a busy machine failed it already
                        assert (await call_ok(client, "artifact_get", {"artifact_id": art_id}))["status"] == "failed"
                    deadline = time.monotonic() + 60
                    while (view := await call_ok(client, "artifact_get", {"artifact_id": art_id}))["status"] != "failed":
                        assert view["status"] == "indexing" and time.monotonic() < deadline, view
                        await asyncio.sleep(0.2)
                    assert "No data was written" in view["error"], view
                    assert not found(await call_ok(client, "hybrid_search", words), art_id)
            asyncio.run(scenario())
    assert len(fake.embedding_requests) > 8


def test_an_ingest_killed_in_the_background_is_finished_by_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.3) as fake:
        fake.script(*["slow"] * 12)
        env = slow_env(fake)
        with http_server(data, env) as server:
            async def start() -> tuple[str, int]:
                async with http_session(server.mcp_url) as client:
                    body = await call_ok(client, "artifact_ingest", {
                        "artifact_type": "doc", "source_system": "logbook", "source_id": "log-2", "content": DOC})
                    assert body["status"] == "indexing"
                    # killed once its chunks are cut (a busy machine may answer while it still cuts them)
                    return body["artifact_id"], body["chunks_total"] or await chunks_known(client, body["artifact_id"])
            art_id, total = asyncio.run(start())
            server.process.send_signal(signal.SIGKILL)  # mid-ingest, after the call returned
            server.process.wait(10)
        requests_before = len(fake.embedding_requests)
        with http_server(data, env) as server:
            async def finish() -> None:
                async with http_session(server.mcp_url) as client:
                    view = await call_ok(client, "artifact_get", {"artifact_id": art_id})
                    assert view["status"] in ("indexing", "indexed")
                    done = await wait_committed(client, art_id)
                    assert done["metadata"]["num_chunks"] == total
                    full = await call_ok(client, "artifact_get", {"artifact_id": art_id, "include_content": True})
                    assert full["content"] == DOC
                    hits = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    assert found(hits, art_id)
            asyncio.run(finish())
        inputs = sum(len(r.body["input"]) for r in fake.embedding_requests[requests_before:]
                     if isinstance(r.body.get("input"), list))
        assert inputs < total + 40, "the restarted server embedded the batches already stored again"


def test_a_long_session_store_answers_duplicates_by_id_and_is_finished_after_a_kill(tmp_path: Path) -> None:
    """Spec 001's store tools over the same write path: past the budget a report answers its memory's id
    with status indexing and how many chunks it has; the same report stored again meanwhile answers the
    same id as a duplicate (not a refusal, not a second copy); a kill mid-embedding is finished by the
    next start's recovery, after which the report reads back whole and a third store is a duplicate."""
    data = tmp_path / "data"
    report = {"agent_id": "analyst", "session_id": "s-long", "session_iter": "v1", "content": DOC}
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.3) as fake:
        fake.script(*["slow"] * 40)  # every request of the report slow: ~6 s of embedding, past the 1 s budget
        env = slow_env(fake, MEMTROVE_TOOLSETS="sessions")
        with http_server(data, env) as server:
            async def start() -> tuple[str, int]:
                async with http_session(server.mcp_url) as client:
                    first = await call_ok(client, "store_report", report)
                    assert first["status"] == "indexing" and first["duplicate"] is False, first
                    assert first["chunks_total"] > 100, first
                    again = await call_ok(client, "store_report", report)
                    assert again["memory_id"] == first["memory_id"] and again["duplicate"] is True, again
                    assert again["status"] == "indexing" and "already being stored" in again["message"], again
                    assert again["chunks_created"] > 100, again  # its chunks are cut: counted
                    unfinished = await call_ok(client, "search_reports_full_documents", {"session_id": "s-long"})
                    assert unfinished["results"] == [], "committed before the kill: nothing left to recover"
                    return first["memory_id"], again["chunks_created"]
            memory_id, chunks = asyncio.run(start())
            server.process.send_signal(signal.SIGKILL)  # mid-embedding, after both calls returned
            server.process.wait(10)
        with http_server(data, env) as server:
            async def finish() -> None:
                async with http_session(server.mcp_url) as client:
                    deadline = time.monotonic() + 90.0
                    while True:
                        found = await call_ok(client, "search_reports_full_documents", {"session_id": "s-long"})
                        if found["results"] or time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.3)
                    assert [r["id"] for r in found["results"]] == [memory_id], found
                    whole = await call_ok(client, "reconstruct_document", {"memory_id": memory_id})
                    assert whole["content"] == DOC and whole["chunk_count"] == chunks, whole["chunk_count"]
                    third = await call_ok(client, "store_report", report)
                    assert (third["memory_id"], third["duplicate"], third["chunks_created"]) == (memory_id, True,
                                                                                                 chunks), third
                    assert "status" not in third, third
            asyncio.run(finish())


def test_a_zapomni_memory_added_twice_at_once_is_one_memory(tmp_path: Path) -> None:
    """Spec 002's add_memory has no call budget: a second client adding the same text while the first
    is still embedding it gets the same memory as a duplicate, not a second copy or a refusal."""
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.3) as fake:
        fake.script(*["slow"] * 40)
        env = slow_env(fake, MEMTROVE_TOOLSETS="zapomni", MEMTROVE_WARMUP="false")
        with http_server(tmp_path / "data", env) as server:
            before = len(fake.embedding_requests)

            async def add(after_first_request: bool) -> tuple[dict[str, Any], str]:
                while after_first_request and len(fake.embedding_requests) == before:  # the first call is embedding
                    await asyncio.sleep(0.05)
                async with http_session(server.mcp_url) as client:
                    result = await client.call_tool("add_memory", {"text": DOC, "metadata": {"tags": ["log"]}})
                    assert not result.is_error, result.structured_content
                    return result.structured_content, result.content[0].text

            async def both() -> None:
                (first, _), (second, said) = await asyncio.gather(add(False), add(True))
                assert first["memory_id"] == second["memory_id"], (first, second)
                assert (first["duplicate"], second["duplicate"]) == (False, True), (first, second)
                assert said.startswith("Memory already being added by another call"), said
                async with http_session(server.mcp_url) as client:
                    stats = await call_ok(client, "get_stats")
                    assert stats["statistics"]["total_memories"] == 1, stats
            asyncio.run(both())
