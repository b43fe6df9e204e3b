"""Restore bundles and context packs on a project of 500 items (spec 004), over MCP in-process with the
real SQLite, Chroma and local model; core's hybrid_search on the same store is the reference."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime
from tests.benchmarks.conftest import percentiles, size
from tests.benchmarks.test_markdown_retrieval import FILES, SOURCES, rst_to_markdown

TOPICS = ["billing", "auth", "search", "deploys", "queues", "caching", "metrics", "backups", "email", "payments"]
KINDS = ["decision", "troubleshooting", "note", "plan", "spec"]


def item(n: int, rng: random.Random) -> dict[str, Any]:
    topic, other = rng.sample(TOPICS, 2)
    text = (f"Item {n} about {topic}. We looked at {other} too. " +
            " ".join(f"The {topic} {rng.choice(['service', 'job', 'table', 'worker'])} needs {rng.choice(['a retry', 'an index', 'a limit', 'a lock'])}."
                     for _ in range(6)))
    return {"kind": KINDS[n % len(KINDS)], "title": f"{topic.title()} item {n}", "content": text, "tags": [topic]}


async def measure(tmp: Path, items: int, goals: int) -> dict[str, Any]:
    from mcp.client import Client

    runtime = Runtime(Settings(memtrove_data_dir=tmp, memtrove_warmup=False, memtrove_toolsets="core,documents"))
    runtime.start()
    runtime.ensure_ready()
    rng = random.Random(7)
    try:
        async with Client(build_server(runtime)) as client:
            async def call(tool: str, **arguments: Any) -> dict[str, Any]:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.structured_content
                return result.structured_content

            for start in range(0, items, 50):
                await call("memory_commit", idempotencyKey=f"bulk-{start}",
                           entries=[item(n, rng) for n in range(start, min(items, start + 50))], sessionId="bench")
            names = [n for n in FILES[:size(3, 1)] if (SOURCES / f"{n}.rst.txt").exists()]  # smoke: json alone
            for name in names:
                await call("canonical_upsert", canonicalKey=f"lib/{name}", docClass="feature_spec", title=name,
                           contentMarkdown=rst_to_markdown((SOURCES / f"{name}.rst.txt").read_text(encoding="utf-8")),
                           idempotencyKey=f"canon-{name}")
            timings: dict[str, list[float]] = {"restore": [], "context_pack": [], "hybrid_search": []}
            for n in range(goals):
                goal = f"{TOPICS[n % len(TOPICS)]} {rng.choice(['retry', 'index', 'limit', 'lock'])}"
                for tool, arguments in (("restore", ("memory_restore", {"goal": goal})),
                                        ("context_pack", ("canonical_context_pack", {
                                            "canonicalKey": f"lib/{names[n % len(names)]}", "goal": goal})),
                                        ("hybrid_search", ("hybrid_search", {"query": goal, "limit": 10}))):
                    started = time.perf_counter()
                    body = await call(arguments[0], **arguments[1])
                    timings[tool].append(time.perf_counter() - started)
                    if tool == "restore":
                        assert body["totalChars"] <= 30_000 and len(body["entries"]) <= 12
    finally:
        runtime.shutdown()
    figures: dict[str, Any] = {"items": items, "goals": goals}
    for tool, samples in timings.items():
        figures[tool] = percentiles(samples)
    for tool in ("restore", "context_pack"):
        figures[f"{tool}_to_hybrid_search_p50"] = round(
            statistics.median(timings[tool]) / statistics.median(timings["hybrid_search"]), 2)
    return figures


@pytest.mark.slow
def test_restore_and_context_pack_latency(report, tmp_path: Path) -> None:
    if not SOURCES.exists():
        pytest.skip("Debian's python3-doc is not installed (apt-get install python3-doc): no canonical corpus")
    figures = asyncio.run(measure(tmp_path, size(500, 40), size(40, 5)))
    report(**figures)
    assert figures["restore"]["n"] == figures["goals"] == figures["context_pack"]["n"]
