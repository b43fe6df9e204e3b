"""Replicas that cannot hurt each other (issue 9, part 3), tested for real.

Two ``memtrove serve --transport http`` replicas, each with its own data dir, over one PostgreSQL
database and one ``chroma run`` server that the test starts; concurrent clients on both. While
they run, one replica is killed with SIGKILL in the middle of an artifact ingest and restarted on
the same port (its clients carry on through the other replica meanwhile, then come back); a kill
that misses (the ingest had not reached the server) is tried again, up to three times. Then:
no error but the calls the kill cut off, nothing partial ever read, nothing acknowledged lost,
re-ingesting every artifact converges, and every item is found through both replicas (a write
through one is found through the other). 8 clients × 40 operations in the ordinary run, 16 × 500
under MEMTROVE_BENCH_FULL=1.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_concurrency import keep
from tests.support.chroma_server import chroma_server
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.load import (
    LoadConfig, LoadRun, baseline, compare, converge, fake_embedder_env, health_url, problems, summary, verify,
)
from tests.support.mcp_procs import START_TIMEOUT, free_port, memtrove_command, server_env
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.slow

FULL = os.environ.get("MEMTROVE_BENCH_FULL") == "1"
CLIENTS, OPS = (16, 500) if FULL else (8, 40)
KILL_AFTER = 0.4  # share of all operations done before the kill
KILL_WAIT = 60.0  # seconds to wait for an ingest in flight on the victim before killing anyway
KILLS = 3  # kills at most, until one lands inside an ingest
IN_FLIGHT = 0.1  # seconds an ingest has been under way before the kill
DOWN_FOR = 1.0  # seconds the killed replica stays down (its clients notice and move)


@dataclass
class Replica:
    """One ``memtrove serve --transport http`` process on a fixed port, so it can come back at the same URL."""

    name: str
    data_dir: Path
    env: dict[str, str]
    log_path: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp/"

    def start(self, timeout: float = START_TIMEOUT) -> float:
        """Start it and wait for /health; returns the seconds that took."""
        started = time.monotonic()
        self.starts += 1
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(f"\n--- start {self.starts}\n")
            log.flush()
            self.process = subprocess.Popen(
                [*memtrove_command(), "serve", "--transport", "http", "--port", str(self.port)],
                env=server_env(self.data_dir, self.env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log)
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica {self.name} exited with {self.process.returncode}; log:\n"
                                   f"{self.log_path.read_text()[-4000:]}")
            try:
                if httpx.get(health_url(self.mcp_url), timeout=5.0).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"replica {self.name} did not answer /health in {timeout:.0f}s")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


@dataclass
class Cluster:
    a: Replica
    b: Replica
    database_url: str

    @property
    def urls(self) -> list[str]:
        return [self.a.mcp_url, self.b.mcp_url]


def start_together(*replicas: Replica) -> None:
    """Both at once on the fresh database: creating the schema must be safe from two processes."""
    errors: list[BaseException] = []

    def start(replica: Replica) -> None:
        try:
            replica.start()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(r,)) for r in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


@pytest.fixture
def cluster(tmp_path: Path, postgres_url: str) -> Iterator[Cluster]:
    database = fresh_database(postgres_url)
    with QuickFakeOpenAIServer(default_dimensions=32) as fake, \
            chroma_server(tmp_path / "chroma", tmp_path / "chroma.log") as chroma:
        env = {**fake_embedder_env(fake.base_url), **chroma.env(), "MEMTROVE_DATABASE_URL": database}
        a = Replica("a", tmp_path / "a", env, tmp_path / "a.log")
        b = Replica("b", tmp_path / "b", env, tmp_path / "b.log")
        try:
            start_together(a, b)
            yield Cluster(a, b, database)
        finally:
            a.stop()
            b.stop()


def cut_ingests(run: LoadRun, victim: Replica, since: float) -> list[str]:
    """Ingests the kill cut off inside the server: their connection broke, it was not refused (a
    ConnectError means the request never reached the victim)."""
    return [f.message for f in run.stats.failures if f.url == victim.mcp_url and f.tool == "artifact_ingest"
            and f.failed >= since and not f.message.startswith("ConnectError")]


async def kill_mid_ingest(run: LoadRun, victim: Replica) -> list[dict[str, Any]]:
    """Once KILL_AFTER of the load is done, SIGKILL ``victim`` while it serves an artifact_ingest, then
    restart it on the same port; again (at most KILLS times) until a kill lands inside an ingest."""
    while run.ops_done < KILL_AFTER * run.ops_total:
        await asyncio.sleep(0.01)
    kills: list[dict[str, Any]] = []
    while len(kills) < KILLS and run.ops_done < run.ops_total:
        deadline = time.monotonic() + KILL_WAIT
        while time.monotonic() < deadline and run.ops_done < run.ops_total:
            now = time.monotonic()
            # In flight a while: the request has most likely reached the server (checked afterwards).
            if any(tool == "artifact_ingest" and now - since > IN_FLIGHT for tool, _, since
                   in run.inflight_on(victim.mcp_url)):
                break
            await asyncio.sleep(0.005)
        cut, at_ops, killed_at = run.inflight_on(victim.mcp_url), run.ops_done, time.monotonic()
        with run.outage(victim.mcp_url):
            victim.kill()
            await asyncio.sleep(DOWN_FOR)
            restart_seconds = await asyncio.to_thread(victim.start)
        inside = cut_ingests(run, victim, killed_at)
        kills.append({"at_ops": at_ops, "of_ops": run.ops_total, "restart_seconds": round(restart_seconds, 2),
                      "in_flight_at_kill": [f"{t} ({label})" for t, label, _ in cut], "ingests_cut": inside})
        if inside:
            break
    return kills


async def scenario(cluster: Cluster) -> dict[str, Any]:
    single = await baseline(cluster.urls, OPS // 2)
    run = LoadRun(cluster.urls, LoadConfig(clients=CLIENTS, ops=OPS))
    load = asyncio.create_task(run.run())
    try:
        kills = await kill_mid_ingest(run, cluster.a)
    finally:
        await load
    report = run.report()
    report["kills"] = kills
    report["single_client"] = single["tools"]
    report["latency"] = compare(single, report)
    # Converge through the replica that kept running; read back and search through both.
    report["converge"] = await converge(run.ledger, cluster.b.mcp_url)
    report["verification"] = await verify(run.ledger, cluster.urls, db_url=cluster.database_url)
    report["problems"] = problems(report)
    return report


def test_two_replicas_one_killed_mid_ingest(cluster: Cluster, tmp_path: Path) -> None:
    report = asyncio.run(scenario(cluster))
    keep(report, tmp_path / "replicas.json")
    assert report["kills"] and report["kills"][-1]["ingests_cut"], report["kills"]
    assert report["ops_done"] == CLIENTS * OPS and not report["clients_gave_up"]
    for url in cluster.urls:  # both replicas served the load, and both answered the checks
        assert sum(report["verification"]["search"][url]["found"].values()), url
    assert not report["problems"], summary(report)
