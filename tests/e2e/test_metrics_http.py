"""GET /metrics over HTTP, after a small scenario: tool calls by tool and status, searches by mode,
writes and errors move by what was done; behind the same bearer token as /mcp."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.support.mcp_procs import blocking, http_server, http_session, run_cli

pytestmark = pytest.mark.slow
TOKEN = "metrics-test-shared-token"


def sample(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


def test_metrics_count_what_the_server_did(tmp_path: Path) -> None:
    with http_server(tmp_path / "data", token=TOKEN) as server:
        url = server.mcp_url.rsplit("/mcp", 1)[0] + "/metrics"
        assert httpx.get(url, timeout=30).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        before = httpx.get(url, headers=auth, timeout=30).text  # /health probes embed a query each
        with blocking(http_session(server.mcp_url, TOKEN)) as client:
            assert not client.call("memory_store", {"content": "The ferry leaves at nine.", "type": "fact",
                                                    "confidence": 0.9}).is_error
            for mode in ("lexical", "hybrid", "lexical"):
                assert not client.call("hybrid_search", {"query": "ferry", "mode": mode}).is_error
            assert client.call("artifact_get", {"artifact_id": "art_" + "0" * 32}).is_error
            ingested = client.call("artifact_ingest", {"artifact_type": "doc", "source_system": "wiki",
                                                       "content": "Ferry timetable. " * 400})
            assert not ingested.is_error
            chunks = ingested.structured_content["num_chunks"]
        got = httpx.get(url, headers=auth, timeout=30)
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
        text = got.text
        assert sample(text, "memtrove_tool_calls_total", tool="memory_store", status="ok") == 1
        assert sample(text, "memtrove_tool_calls_total", tool="hybrid_search", status="ok") == 3
        assert sample(text, "memtrove_searches_total", tool="hybrid_search", mode="lexical") == 2
        assert sample(text, "memtrove_searches_total", tool="hybrid_search", mode="hybrid") == 1
        assert sample(text, "memtrove_writes_total", tool="memory_store") == 1
        assert sample(text, "memtrove_tool_errors_total", tool="artifact_get", kind="not_found") == 1
        assert sample(text, "memtrove_tool_latency_seconds_count", tool="hybrid_search") == 3
        assert "memtrove_outbox_backlog" in text
        assert sample(text, "memtrove_artifacts_ingested_total", status="ingested") == 1
        assert chunks > 1 and float(re.search(r"^memtrove_artifact_chunks_total (\S+)$", text, re.M).group(1)) == chunks
        queries = sample(text, "memtrove_embeddings_total", kind="query") - sample(before, "memtrove_embeddings_total",
                                                                                   kind="query")
        assert queries == 1  # the one search in hybrid mode
        assert sample(text, "memtrove_embeddings_total", kind="document") >= chunks + 1
        assert sample(text, "memtrove_search_results_count", tool="hybrid_search") == 3
        assert sample(text, "memtrove_search_latency_seconds_count", tool="hybrid_search", mode="lexical") == 2
        assert sample(text, "memtrove_vector_operations_total", operation="query", status="ok") >= 1
        for _ in range(60):  # the vector worker's rounds are timed once it has synced the writes
            text = httpx.get(url, headers=auth, timeout=30).text
            if sample(text, "memtrove_job_duration_seconds_count", job="vector_sync") >= 1:
                break
            time.sleep(0.5)
        assert sample(text, "memtrove_job_duration_seconds_count", job="vector_sync") >= 1
        assert sample(text, "memtrove_vector_operations_total", operation="upsert", status="ok") >= 1
        health = httpx.get(server.mcp_url.rsplit("/mcp", 1)[0] + "/health", headers=auth, timeout=30).json()
        assert health["status"] == "healthy" and set(health["checks"]) == {"metadata_store", "vector_index", "embedder"}
        assert health["checks"]["embedder"]["latency_ms"] >= 0 and health["checks"]["embedder"]["dimensions"] == 384


def test_a_token_holder_sees_only_its_own_clients_series(tmp_path: Path) -> None:
    """Per-client series (memtrove_client_calls_total{client=...}) are the owner's to see: a token's holder
    gets its own token's (and its page's), never another token's; every other series stays whole."""
    data = tmp_path / "data"
    ids, secrets = {}, {}
    for user in ("alice", "bob"):
        made = run_cli(["token", "create", "--user", user], data)
        assert made.returncode == 0, made.stderr
        ids[user] = re.search(r"token_id: (\S+)", made.stdout).group(1)  # type: ignore[union-attr]
        secrets[user] = re.search(r"secret:\s+(\S+)", made.stdout).group(1)  # type: ignore[union-attr]
    with http_server(data, token=TOKEN) as server:
        url = server.base_url + "/metrics"
        for who in ("alice", "bob"):
            with blocking(http_session(server.mcp_url, secrets[who])) as client:
                assert not client.call("memory_store", {"content": f"{who} keeps bees.", "type": "fact",
                                                        "confidence": 0.9}).is_error
        with blocking(http_session(server.mcp_url, TOKEN)) as client:
            assert not client.call("hybrid_search", {"query": "bees", "mode": "lexical"}).is_error

        def clients(secret: str) -> set[str]:
            text = httpx.get(url, headers={"Authorization": f"Bearer {secret}"}, timeout=30).text
            assert sample(text, "memtrove_tool_calls_total", tool="memory_store", status="ok") == 2  # the rest whole
            return set(re.findall(r'^memtrove_client_calls_total\{client="([^"]+)"', text, re.M))

        assert clients(secrets["bob"]) == {ids["bob"]}
        assert clients(secrets["alice"]) == {ids["alice"]}
        assert clients(TOKEN) == {ids["alice"], ids["bob"], "shared token"}  # the owner sees every client
