"""A user's view of a damaged vector index: the server is stopped, one of Chroma's HNSW files is lost
(a bad disk, a partial backup restored, a kill at the wrong moment), and the next server answers a
search by meaning as before: it rebuilds that collection from the store's copy of its vectors, without
calling the embedding API again for what it stored.

Real processes: ``memtrove serve`` over stdio with the official client, the embedded store (SQLite
and embedded Chroma), an OpenAI-compatible embedding API served by a real local HTTP server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e import scenario
from tests.support.crash_driver import QuickFakeOpenAIServer, document
from tests.support.mcp_procs import stdio_session

pytestmark = pytest.mark.slow

ENV = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32",
       "CHUNK_TARGET_TOKENS": "40", "CHUNK_OVERLAP_TOKENS": "8", "SINGLE_PIECE_MAX_TOKENS": "40"}


def hnsw_files(data: Path) -> list[Path]:
    return sorted(f for f in (data / "chroma").glob("*/data_level0.bin"))


def test_a_search_meets_a_lost_hnsw_file_and_is_answered(tmp_path: Path) -> None:
    data = tmp_path / "data"
    text = document(7, 1140)  # past 1,000 chunks: Chroma writes the collection's HNSW files
    with QuickFakeOpenAIServer(default_dimensions=32) as fake:
        env = {**ENV, "OPENAI_BASE_URL": fake.base_url}

        async def store() -> dict:
            async with stdio_session(data, env, tmp_path / "first.log") as client:
                made = await scenario.call_ok(client, "artifact_ingest", {
                    "artifact_type": "doc", "source_system": "notes", "source_id": "big", "title": "Big notes",
                    "content": text})
                got = await scenario.call_ok(client, "artifact_get", {"artifact_id": made["artifact_id"],
                                                                     "include_chunks": True, "include_content": True})
                # A search by meaning reads its writes: every vector is in Chroma before the server stops.
                await scenario.call_ok(client, "artifact_search", {"query": "anything", "mode": "vector"})
                return got
        stored = asyncio.run(store())
        chunks = stored["chunks"]
        assert len(chunks) > 1_000
        files = hnsw_files(data)
        assert files, "the chunk collection's HNSW files should be on disk"
        for f in files:
            f.unlink()
        target = chunks[len(chunks) // 2]
        words = stored["content"][target["start_char"]:target["end_char"]]
        embedded = len(fake.inputs())

        async def search() -> dict:
            async with stdio_session(data, env, tmp_path / "second.log") as client:
                return await scenario.call_ok(client, "artifact_search", {"query": words,
                                                                         "mode": "vector", "limit": 3})
        found = asyncio.run(search())
        assert found["results"], found
        best = found["results"][0]
        assert best["id"] == target["chunk_id"] and best["similarity"] == pytest.approx(1.0, abs=1e-3), best
        assert len(fake.inputs()) == embedded + 1  # the query alone: the stored chunks were not embedded again
    log = (tmp_path / "second.log").read_text(encoding="utf-8")
    assert "rebuilding it from the store's copy" in log
