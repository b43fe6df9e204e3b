"""A user's view of a damaged vector index: the server is stopped, one of Chroma's HNSW files is lost
(a bad disk, a partial backup restored, a kill at the wrong moment), and the next server answers a
search by meaning as before: it rebuilds that collection from the store's copy of its vectors, without
calling the embedding API again for what it stored. And a server started from a shell whose soft
open-files limit is low (which sizes embedded Chroma's cache of indexes) runs with it raised.

Real processes: ``memtrove serve`` over stdio with the official client, the embedded store (SQLite
and embedded Chroma), an OpenAI-compatible embedding API served by a real local HTTP server.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import scenario
from tests.support.crash_driver import QuickFakeOpenAIServer, document
from tests.support.mcp_procs import (
    READ_TIMEOUT,
    memtrove_command,
    server_env,
    stdio_session,
)

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


@asynccontextmanager
async def low_limit_session(data: Path, env: dict[str, str], log: Path, pid_file: Path) -> AsyncIterator[Any]:
    """``memtrove serve`` started by a shell that lowered its soft open-files limit to 256 first."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command="/bin/sh", args=[
        "-c", f'ulimit -S -n 256 && echo $$ > "{pid_file}" && exec "$@"', "sh", *memtrove_command(), "serve"],
        env=server_env(data, env))
    with open(log, "a", encoding="utf-8") as errlog:  # noqa: ASYNC230 - a local log file, opened once
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=READ_TIMEOUT) as client:
            yield client


def soft_open_files(pid_file: Path) -> int:
    limits = Path(f"/proc/{pid_file.read_text().strip()}/limits").read_text(encoding="utf-8")
    return int(next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3])


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads the server's limits from /proc")
def test_a_server_started_under_a_low_open_files_limit_raises_it_and_finds_by_meaning(tmp_path: Path) -> None:
    data, pid_file = tmp_path / "data", tmp_path / "server.pid"
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    expected = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    facts = ["The staging database lives in Frankfurt", "Invoices are archived for ten years",
             "The release train leaves every second Tuesday"]
    with QuickFakeOpenAIServer(default_dimensions=32) as fake:
        env = {**ENV, "OPENAI_BASE_URL": fake.base_url}

        async def session(log: str, store: bool) -> tuple[list[str], int]:
            async with low_limit_session(data, env, tmp_path / log, pid_file) as client:
                if store:
                    for fact in facts:
                        await scenario.store(client, fact)
                found = [(await scenario.search(client, fact, mode="vector", limit=1))["results"][0]["content"]
                         for fact in facts]
                return found, soft_open_files(pid_file)
        # The second server, as after a restart, has only what was stored on disk and in Chroma's log.
        for log, store in (("first.log", True), ("second.log", False)):
            found, soft = asyncio.run(session(log, store))
            assert found == facts
            assert soft == expected, (soft, expected)
            assert "open-files limit" not in (tmp_path / log).read_text(encoding="utf-8")
