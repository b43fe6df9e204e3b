"""memory_store and memory_search latency over MCP stdio with 10,000 memories; RSS after a large ingest."""

from __future__ import annotations

import random
from pathlib import Path

import psutil
import pytest
from anyio.from_thread import start_blocking_portal

from config.settings import Settings
from domain.model import AuditEntry, Memory, VectorRecord
from domain.ids import new_memory_id, piece_id
from domain.chunking import content_hash
from entrypoints.runtime import Runtime
from tests.benchmarks.conftest import measure, percentiles, size
from tests.support.mcp_procs import stdio_session

SUBJECTS = ["the user", "Alice", "the team", "our client", "Bob", "the project"]
VERBS = ["prefers", "decided on", "is working on", "asked about", "dislikes", "scheduled"]
OBJECTS = ["dark mode", "Python 3.12", "a Friday deadline", "PostgreSQL", "green tea", "the Berlin trip",
           "weekly reports", "vim keybindings", "the Q3 budget", "a standing desk", "Rust for the parser"]


def sentence(rng: random.Random) -> str:
    return (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"(note {rng.randrange(10**6)})")


def seed(data_dir: Path, count: int) -> None:
    """Bulk-load ``count`` memories through the real adapters (the MCP path is what gets measured):
    rows with their vectors in the store, then into the index from the outbox."""
    runtime = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False, memtrove_shared=False))
    runtime.start()
    runtime.ensure_ready()
    embedder, store = runtime.app.adapters.embedder(), runtime.app.adapters.store()
    rng = random.Random(7)
    for start in range(0, count, 256):
        batch = [sentence(rng) for _ in range(min(256, count - start))]
        for text, vector in zip(batch, embedder.embed_documents(batch), strict=True):
            memory = Memory(new_memory_id(), text, rng.choice(["fact", "preference", "decision"]), 0.8,
                            "2025-01-01T00:00:00Z", None, 12, embedder.profile)
            record = VectorRecord(piece_id(memory.id, content_hash(text), 0), memory.id, vector,
                                  {"type": memory.type, "confidence": 0.8, "conversation_id": "",
                                   "ts_epoch": 1735689600.0, "version": content_hash(text)[:12], "piece": 0})
            store.add_memory(memory, AuditEntry("store", "memory", (memory.id,), "bench", memory.ts), [record])
    runtime.app.use_cases.sync_vectors().catch_up()
    assert runtime.app.adapters.vectors().count("memory") == count
    runtime.shutdown()


def server_rss_mb() -> float:
    children = psutil.Process().children(recursive=True)
    servers = [p for p in children if "serve" in " ".join(p.cmdline())]
    return round(max(p.memory_info().rss for p in servers) / 2**20, 1)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    data_dir = tmp_path_factory.mktemp("bench-memories")
    seed(data_dir, size(10_000, 300))
    return data_dir


@pytest.fixture(scope="module")
def call(seeded: Path):
    """Calls a tool on one memtrove stdio server over the official MCP client."""
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_session(seeded)) as client:
            def invoke(name: str, args: dict) -> None:
                result = portal.call(client.call_tool, name, args)
                assert not result.is_error, result.content

            invoke("memory_search", {"query": "warm up", "limit": 5})  # load the model before timing
            yield invoke


def test_memory_store_latency(benchmark, report, call) -> None:
    rng = random.Random(11)
    samples = measure(benchmark, lambda: call("memory_store", {"content": sentence(rng), "type": "fact",
                                                               "confidence": 0.9}), size(200, 20))
    report(memories=size(10_000, 300), **percentiles(samples))


def test_memory_search_latency(benchmark, report, call) -> None:
    rng = random.Random(12)
    samples = measure(benchmark, lambda: call("memory_search", {
        "query": f"what does {rng.choice(SUBJECTS)} prefer about {rng.choice(OBJECTS)}", "limit": 5}),
        size(200, 20))
    report(memories=size(10_000, 300), **percentiles(samples))


def test_rss_after_a_large_ingest(benchmark, report, call) -> None:
    rng = random.Random(13)
    long_text = " ".join(sentence(rng) for _ in range(40))
    turns = iter(range(10**6))
    samples = measure(benchmark, lambda: call("history_append", {
        "conversation_id": "bench", "role": "user", "content": f"{next(turns)} {long_text}",
        "turn_index": next(turns)}), size(200, 10))
    report(turns=len(samples), chars_per_turn=len(long_text), **percentiles(samples),
           server_rss_mb=server_rss_mb())
