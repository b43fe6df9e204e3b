"""Switching a store's local model without losing service, over HTTP with real server processes: a store
built with MiniLM, opened with e5-small configured, keeps answering searches with MiniLM while it
re-embeds in the background; a SIGKILL half-way loses nothing (the next start resumes where the ledger
says); once complete, it switches at once and answers with e5-small, every item found again."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import blocking, http_server, http_session, run_cli, start_http_server

pytestmark = pytest.mark.slow

MINILM, E5 = {"MEMTROVE_LOCAL_MODEL": "minilm"}, {"MEMTROVE_LOCAL_MODEL": "e5-small"}
FACTS = [f"Ferry {i} to the island of Vell{i} leaves at {i % 12 + 1} o'clock from pier {i}." for i in range(24)]


def health(client: Any) -> dict[str, Any]:
    got = client.call("embedding_health", {})
    assert not got.is_error, got
    return got.structured_content


def search(client: Any, query: str) -> dict[str, Any]:
    got = client.call("memory_search", {"query": query, "limit": 3, "mode": "vector"})
    assert not got.is_error, got
    return got.structured_content


def test_a_store_switches_model_in_the_background_and_survives_a_kill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with http_server(data, MINILM) as server, blocking(http_session(server.mcp_url)) as client:
        for fact in FACTS:
            assert not client.call("memory_store", {"content": fact, "type": "fact", "confidence": 0.9}).is_error
        guides = []
        for i in range(3):
            got = client.call("artifact_ingest", {"artifact_type": "doc", "source_system": "wiki",
                                                  "source_id": f"guide-{i}", "content": (
                f"Harbour guide {i}. " + "The pilot boards at the outer buoy and docks at berth seven. " * 40)})
            assert not got.is_error
            guides.append(got.structured_content["artifact_id"])
        for i in range(4):
            assert not client.call("history_append", {"conversation_id": "trip", "role": "user", "turn_index": i,
                                                      "content": f"Turn {i}: we booked ferry {i}."}).is_error

    # e5-small configured: served with MiniLM meanwhile; killed once part of the store is re-embedded.
    killed_at = 0
    server = start_http_server(data, E5)
    try:
        with blocking(http_session(server.mcp_url)) as client:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                status = health(client)["model_switch"]
                assert status["state"] == "re-embedding" and status["to"].endswith("multilingual-e5-small-q4/384d")
                got = client.call("artifact_get", {"artifact_id": guides[0]}).structured_content
                assert got["model_switch"]["to"] == status["to"] and got["model_switch"]["reembedded"] in (True, False)
                hits = search(client, "when does the ferry to Vell3 leave")["results"]
                assert hits and hits[0]["provenance"]["embedding_model"] == "all-MiniLM-L6-v2"
                if status["done"] >= 6:
                    killed_at = status["done"]
                    break
                time.sleep(0.3)
            assert killed_at, "the re-embedding made no progress"
    finally:
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)

    doctor = run_cli(["doctor"], data, E5)
    assert "model switch: local/all-MiniLM-L6-v2/384d -> local/multilingual-e5-small-q4/384d" in doctor.stdout, \
        doctor.stdout + doctor.stderr

    with http_server(data, E5) as server, blocking(http_session(server.mcp_url)) as client:
        first = health(client)["model_switch"]
        assert first["done"] >= killed_at  # resumed where the ledger says, not from nothing
        answered = 0
        deadline = time.monotonic() + 600
        while health(client)["model_switch"]["state"] != "switched":
            assert time.monotonic() < deadline, health(client)
            assert search(client, "when does the ferry to Vell3 leave")["results"]
            answered += 1
            time.sleep(0.3)
        assert answered >= 1
        assert health(client)["model"] == "multilingual-e5-small-q4"
        for i in (3, 17):
            hits = search(client, f"when does the ferry to the island of Vell{i} leave")["results"]
            assert hits[0]["provenance"]["embedding_model"] == "multilingual-e5-small-q4"
            assert hits[0]["content"] == FACTS[i]
        found = client.call("hybrid_search", {"query": "where does the pilot board", "mode": "vector", "limit": 3})
        results = found.structured_content["results"]
        assert len(results) == 3, results  # the three guides, found by their e5 vectors
        assert all(r["provenance"]["embedding_model"] == "multilingual-e5-small-q4" for r in results), results
        assert "model_switch" not in client.call("artifact_get", {"artifact_id": guides[0]}).structured_content
        stored = client.call("memory_store", {"content": "After the switch.", "type": "fact", "confidence": 0.9})
        assert stored.structured_content["embedding_model"] == "multilingual-e5-small-q4"

    # Started again: the store's profile is e5-small, nothing to switch, nothing refused.
    with http_server(data, E5) as server, blocking(http_session(server.mcp_url)) as client:
        assert "model_switch" not in health(client)
        assert search(client, "when does the ferry to Vell3 leave")["results"][0]["content"] == FACTS[3]
    assert run_cli(["doctor"], data, E5).returncode == 0
