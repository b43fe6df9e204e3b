"""A server killed half-way through an ingest with its vectors in pgvector: the restarted server (once
the dead worker's lease ran out) finishes the ingest, and the pgvector index then holds exactly the
vectors the store holds — no half-written version visible at any point, nothing lost."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.vectors.pgvector import PgVectorIndex
from domain.model import EmbeddingProfile
from tests.e2e.test_postgres_stdio import pgvector_available
from tests.integration.test_crash_safety import BATCHES, DIMS, SOURCE, V1, base_env, ingest_args
from tests.support.crash_driver import QuickFakeOpenAIServer, RawStdioServer, ServerDied
from tests.support.postgres import fresh_database
from tests.support.store_state import wait_until_drained

pytestmark = pytest.mark.slow
PROFILE = EmbeddingProfile("openai-compatible", "fake", DIMS, 8191)


@pytest.mark.parametrize("point", ["pending_written", f"vectors_{BATCHES // 2}", "committed"])
def test_pgvector_ingest_killed_then_recovered(point: str, tmp_path: Path, postgres_url: str) -> None:
    url = fresh_database(postgres_url)
    if not pgvector_available(url):
        pytest.skip("the pgvector extension is not installed (scripts/test builds it)")
    extra = {"MEMTROVE_VECTOR_STORE": "pgvector", "MEMTROVE_JOB_LEASE": "3"}
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        crashed = RawStdioServer(tmp_path / "data", base_env(fake, url, MEMTROVE_CRASH_AT=point, **extra),
                                 tmp_path / "crashed.log")
        with crashed:
            try:
                died = crashed.call("artifact_ingest", ingest_args(V1))
                assert died.is_error, died.text
            except ServerDied:
                pass
        assert crashed.process.returncode == -9, crashed.stderr()[-2000:]
        time.sleep(3.5)  # the dead worker's lease runs out
        with RawStdioServer(tmp_path / "data", base_env(fake, url, **extra), tmp_path / "restarted.log") as server:
            server.initialize()
            deadline, body = time.monotonic() + 300, {}
            while time.monotonic() < deadline:
                got = server.call("artifact_get", {"artifact_id": art_id_of(server), "include_content": True})
                body = got.structured or {}
                if not got.is_error and body.get("status") == "indexed" and "new_version" not in body:
                    break
                assert got.is_error or body.get("status") in ("indexed", "indexing"), body
                time.sleep(1.0)
            assert body.get("content") == V1, f"not recovered: {str(body)[:300]}"
            num_chunks = body["metadata"]["num_chunks"]
            wait_until_drained(url)
            found = server.call("artifact_search", {"query": V1.split("\n\n")[3][:200], "limit": 5})
            assert not found.is_error and found.structured["count"] >= 1, found.text
    index = PgVectorIndex(PROFILE, url)
    try:
        assert index.count("chunk") == num_chunks  # one piece per chunk at these sizes; nothing extra, nothing lost
    finally:
        index.close()


def art_id_of(server: RawStdioServer) -> str:
    from domain.ids import artifact_id

    return artifact_id(SOURCE["source_system"], SOURCE["source_id"], "")
