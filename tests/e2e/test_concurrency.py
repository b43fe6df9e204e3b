"""Many clients, one server (issue 9): concurrent MCP clients over HTTP against one memtrove on SQLite.

Each client stores, searches, lists and deletes memories, appends to its own conversation and to
one shared by all, ingests, re-ingests and deletes artifacts. Afterwards nothing has failed,
nothing acknowledged is lost, nothing deleted is back (read back through paging), and every live
item is found by vector search. 8 clients × 40 operations in the ordinary run, the issue's
16 × 500 under MEMTROVE_BENCH_FULL=1. The embedder is the fake OpenAI-compatible server, so the
load falls on memtrove's storage path, not on a model.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.load import LoadConfig, fake_embedder_env, load_and_verify, summary
from tests.support.mcp_procs import http_server

pytestmark = pytest.mark.slow

FULL = os.environ.get("MEMTROVE_BENCH_FULL") == "1"
CLIENTS, OPS = (16, 500) if FULL else (8, 40)


def keep(report: dict, path: Path) -> None:
    """The whole report beside the test's files, and the summary in the output (-s shows it)."""
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\n{summary(report)}\nreport: {path}")


def test_many_clients_on_one_sqlite_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with QuickFakeOpenAIServer(default_dimensions=32) as fake, \
            http_server(data, fake_embedder_env(fake.base_url), stderr_path=tmp_path / "server.log") as server:
        report = asyncio.run(load_and_verify(
            [server.mcp_url], LoadConfig(clients=CLIENTS, ops=OPS), baseline_ops=OPS // 2,
            db_url=f"sqlite:///{data / 'memtrove.sqlite3'}"))
    keep(report, tmp_path / "load.json")
    read_back = report["verification"]["read_back"]
    assert report["ops_done"] == CLIENTS * OPS
    assert sum(read_back["memories"].values()) and sum(read_back["turns"].values()) \
        and sum(read_back["artifacts"].values()), read_back
    assert not report["problems"], summary(report)
