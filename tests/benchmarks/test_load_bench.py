"""Each tool's p50/p95 under many concurrent clients beside its p50 with one client, over HTTP (issue 9).

One server (SQLite, or PostgreSQL) with the fake OpenAI-compatible embedder, so the figures are
memtrove's own work and its queueing, not a model's. First one client runs the mix alone, then
16 clients × 500 operations (4 × 20 at smoke size) run it together. Figures only: correctness
under this load is tests/e2e/test_concurrency.py's and test_replicas.py's business.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.benchmarks.conftest import size
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.load import LoadConfig, LoadRun, baseline, compare, fake_embedder_env
from tests.support.mcp_procs import http_server
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.slow


async def single_then_loaded(url: str, clients: int, ops: int, single_ops: int) -> dict[str, Any]:
    single = await baseline([url], single_ops)
    run = LoadRun([url], LoadConfig(clients=clients, ops=ops))
    await run.run()
    loaded = run.report()
    return {"clients": clients, "ops_per_client": ops, "wall_seconds": loaded["wall_seconds"],
            "ops_per_second": loaded["ops_per_second"], "errors": loaded["errors"]["by_message"],
            "transport_failures": loaded["transport_failures"]["by_message"],
            "latency": compare(single, loaded)}


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_tool_latency_under_load(benchmark, report, request, tmp_path, store: str) -> None:
    env: dict[str, str] = {}
    if store == "postgresql":
        env["MEMTROVE_DATABASE_URL"] = fresh_database(request.getfixturevalue("postgres_url"))
    clients, ops, single_ops = size(16, 4), size(500, 20), size(200, 40)
    with QuickFakeOpenAIServer(default_dimensions=32) as fake, \
            http_server(tmp_path / "data", {**fake_embedder_env(fake.base_url), **env},
                        stderr_path=tmp_path / "server.log") as server:
        def once() -> dict[str, Any]:
            return asyncio.run(single_then_loaded(server.mcp_url, clients, ops, single_ops))

        figures = benchmark.pedantic(once, rounds=1, iterations=1)  # just runs it when benchmarks are off
    report(store=store, **figures)
