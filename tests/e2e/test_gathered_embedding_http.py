"""Concurrent clients on the local model share its calls (issue 28) and each still gets its own
vectors: over HTTP, clients store memories and search by meaning at the same time, and every
client's memory is the first vector hit of its own text, at a similarity of about 1 (a vector
handed to the wrong caller would put another memory first). Then a short mixed load, verified."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.load import LoadConfig, load_and_verify, summary
from tests.support.mcp_procs import http_server, http_session

pytestmark = pytest.mark.slow

CLIENTS = 8
TOPICS = ("keeps bees on the roof of the office", "learns the cello on Sunday mornings",
          "collects old railway timetables", "brews cider from the garden's apples",
          "restores a wooden sailing boat", "photographs lighthouses along the coast",
          "grows chili peppers on the balcony", "repairs vintage mechanical watches")


def memory(client: int, n: int) -> str:
    return f"Colleague {client} {TOPICS[(client + n) % len(TOPICS)]}, note {n} of client {client}."


async def store_then_search(url: str, client: int) -> list[tuple[str, dict[str, Any]]]:
    """Stores three memories (each answer awaited), then searches for each by its own text: (id, answer)."""
    async with http_session(url) as session:
        ids = []
        for n in range(3):
            stored = await session.call_tool("memory_store", {"content": memory(client, n), "type": "fact",
                                                              "confidence": 0.9})
            assert not stored.is_error, stored
            ids.append(stored.structured_content["id"])
        found = []
        for n in range(3):
            answer = await session.call_tool("memory_search", {"query": memory(client, n), "mode": "vector",
                                                               "limit": 3})
            assert not answer.is_error, answer
            found.append((ids[n], answer.structured_content))
        return found


async def all_clients(url: str) -> list[list[tuple[str, dict[str, Any]]]]:
    return await asyncio.gather(*(store_then_search(url, client) for client in range(CLIENTS)))


def test_concurrent_clients_find_their_own_memories(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with http_server(data, {"MEMTROVE_EMBEDDER": "local", "MEMTROVE_LOCAL_CALL_TOKENS": "512"}, stderr_path=tmp_path / "server.log") as server:
        results = asyncio.run(all_clients(server.mcp_url))
        report = asyncio.run(load_and_verify([server.mcp_url], LoadConfig(clients=4, ops=12),
                                             db_url=f"sqlite:///{data / 'memtrove.sqlite3'}"))
    for client in results:
        for memory_id, answer in client:
            best = answer["results"][0]
            assert best["id"] == memory_id, (memory_id, answer["results"])
            assert best["similarity"] > 0.99, best
    assert not report["problems"], summary(report)
