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
                    assert total > 100 and 0 <= body["chunks_done"] < total
                    assert progress, "no progress notification arrived while the client waited"
                    assert [p for p, _ in progress] == sorted(p for p, _ in progress)
                    assert {t for _, t in progress} == {total}

                    view = await call_ok(client, "artifact_get", {"artifact_id": art_id})
                    assert view["status"] == "indexing" and view["chunks_total"] == total
                    hits = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    assert not found(hits, art_id)  # invisible until complete

                    again = await call_ok(client, "artifact_ingest", {
                        "artifact_type": "doc", "source_system": "logbook", "source_id": "log-1", "content": DOC})
                    assert again["status"] == "indexing" and again["artifact_id"] == art_id  # not started twice

                    done = await wait_committed(client, art_id)
                    assert done["metadata"]["num_chunks"] == total
                    hits = await call_ok(client, "hybrid_search", {"query": "quokkafjord beacon", "limit": 5})
                    assert found(hits, art_id)
                    full = await call_ok(client, "artifact_get", {"artifact_id": art_id, "include_content": True})
                    assert full["content"] == DOC
            asyncio.run(scenario())


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
                    return body["artifact_id"], body["chunks_total"]
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
