"""Load driver: N MCP clients × M mixed operations over streamable HTTP, then read-back and search checks.

The clients (``load_client``) write through a ledger (``load_records``): a write is acknowledged
(the tool answered), failed (a tool error) or unanswered (the connection died), and the
verification (``load_verify``) accepts an unanswered write either way and nothing else. Client i
is pinned to ``urls[i % len(urls)]``. Latencies are of answered calls (ok or tool error: a user
waits for both), per tool and per kind of operation, beside one client's alone when asked.

From the command line, against running servers (every URL of a set of replicas)::

    .venv/bin/python -m tests.support.load --url http://127.0.0.1:3000/mcp/ --clients 16 --ops 500 \\
        --baseline-ops 100 --out load.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.load_client import Client
from tests.support.load_records import GOOD, Ledger, Outage, Stats, normalise, percentiles
from tests.support.load_verify import converge, verify

# Relative weights of the operations each client picks from.
WEIGHTS = {
    "store": 16, "search": 8, "list": 3, "delete": 5,
    "append_own": 10, "append_replace": 3, "append_shared": 9, "history_get": 5,
    "ingest_small": 8, "ingest_large": 2, "reingest": 5, "artifact_delete": 3, "artifact_get": 3,
    "hybrid_search": 8,
}


def fake_embedder_env(base_url: str, dimensions: int = 32) -> dict[str, str]:
    """Server settings for the fake OpenAI-compatible embedder (tests/support/fake_openai.py): the load
    then measures memtrove's storage path, not a model; each text's vector is random but fixed, so a
    query with an item's exact text finds it at similarity 1."""
    return {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": base_url, "OPENAI_EMBED_MODEL": "fake",
            "OPENAI_EMBED_DIMS": str(dimensions), "MEMTROVE_SHARED": "false"}


@dataclass(frozen=True)
class LoadConfig:
    clients: int = 16
    ops: int = 500  # per client
    seed: int = 1
    weights: dict[str, int] = field(default_factory=lambda: dict(WEIGHTS))
    token: str | None = None  # bearer token of the servers


def health_url(mcp_url: str) -> str:
    base = mcp_url.rstrip("/")
    return (base[: -len("/mcp")] if base.endswith("/mcp") else base) + "/health"


class LoadRun:
    """One run: its clients, their ledger and their figures."""

    def __init__(self, urls: Sequence[str], config: LoadConfig = LoadConfig(), run_id: str | None = None) -> None:
        self.urls = list(urls)
        self.config = config
        self.id = run_id or secrets.token_hex(3)
        self.ledger = Ledger(self.id)
        self.stats = Stats()
        self.outages: list[Outage] = []
        self.inflight: dict[int, tuple[str, str, str, float]] = {}  # call -> (url, tool, label, started)
        self.ops_done = 0
        self.gave_up = 0
        self.wall = 0.0
        self.shared_conversation = f"{self.id}-shared"
        self._next_shared = 0
        self.http: httpx.AsyncClient | None = None

    @property
    def ops_total(self) -> int:
        return self.config.clients * self.config.ops

    def next_shared_turn(self) -> int:
        # All clients share one event loop: a plain counter hands every index out once.
        self._next_shared += 1
        return self._next_shared - 1

    @contextmanager
    def outage(self, url: str) -> Iterator[Outage]:
        """Mark ``url`` as down for the block: calls it breaks meanwhile count as interrupted, not failed."""
        outage = Outage(url, time.monotonic())
        self.outages.append(outage)
        try:
            yield outage
        finally:
            outage.end = time.monotonic()

    def inflight_on(self, url: str, label: str | None = None) -> list[tuple[str, str, float]]:
        return [(tool, lab, started) for u, tool, lab, started in self.inflight.values()
                if u == url and (label is None or lab == label)]

    async def healthy(self, url: str) -> bool:
        assert self.http is not None
        try:
            answer = await self.http.get(health_url(url), timeout=5.0)
            return answer.status_code == 200
        except httpx.HTTPError:
            return False

    async def run(self) -> None:
        started = time.monotonic()
        headers = {"Authorization": f"Bearer {self.config.token}"} if self.config.token else {}
        async with httpx.AsyncClient(headers=headers) as self.http:
            clients = [Client(self, n) for n in range(self.config.clients)]
            await asyncio.gather(*(c.drive(self.config.ops) for c in clients))
        self.wall = time.monotonic() - started

    def report(self) -> dict[str, Any]:
        interrupted, unexpected = Counter(), Counter()
        for f in self.stats.failures:
            hit = any(o.covers(f.url, f.started, f.failed) for o in self.outages)
            (interrupted if hit else unexpected)[f"{f.tool}: {normalise(f.message)}"] += 1
        answered = sum(len(v) for v in self.stats.latency.values())
        return {
            "run": self.id, "urls": self.urls, "clients": self.config.clients, "ops_per_client": self.config.ops,
            "ops_done": self.ops_done, "calls_answered": answered, "wall_seconds": round(self.wall, 2),
            "ops_per_second": round(self.ops_done / self.wall, 1) if self.wall else None,
            "calls_per_second": round(answered / self.wall, 1) if self.wall else None,  # tool calls answered
            "errors": {"total": sum(self.stats.errors.values()), "by_message": dict(self.stats.errors.most_common()),
                       "samples": self.stats.error_samples},
            "transport_failures": {"interrupted": sum(interrupted.values()), "unexpected": sum(unexpected.values()),
                                   "by_message": dict(unexpected), "interrupted_by_message": dict(interrupted)},
            "clients_gave_up": self.gave_up,
            "anomalies": dict(self.stats.anomalies),
            "statuses": dict(sorted(self.stats.statuses.items())),
            "tools": {t: {**percentiles(v), "errors": self.stats.tool_errors[t]}
                      for t, v in sorted(self.stats.latency.items())},
            "ops": {label: percentiles(v) for label, v in sorted(self.stats.by_op.items())},
            "outages": [{"url": o.url, "seconds": round((o.end or time.monotonic()) - o.start, 2)}
                        for o in self.outages],
        }


def compare(single: dict[str, Any], loaded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per tool: its p50 alone beside its p50/p95 under load."""
    return {tool: {"single_p50_ms": single["tools"].get(tool, {}).get("p50_ms"),
                   "load_p50_ms": figures.get("p50_ms"), "load_p95_ms": figures.get("p95_ms"),
                   "load_n": figures["n"], "load_errors": figures["errors"]}
            for tool, figures in loaded["tools"].items()}


async def baseline(urls: Sequence[str], ops: int, seed: int = 1, token: str | None = None) -> dict[str, Any]:
    """The same mix from one client alone: each tool's latency without contention."""
    single = LoadRun(urls[:1], LoadConfig(clients=1, ops=ops, seed=seed + 1000, token=token))
    await single.run()
    return single.report()


async def load_and_verify(urls: Sequence[str], config: LoadConfig, *, db_url: str | None = None,
                          baseline_ops: int = 0, verify_after: bool = True, sample: int | None = None,
                          concurrency: int = 4) -> dict[str, Any]:
    """Optionally a single-client baseline, then the load, then converge and verify: the whole report."""
    single = await baseline(urls, baseline_ops, config.seed, config.token) if baseline_ops else None
    run = LoadRun(urls, config)
    await run.run()
    report = run.report()
    if single is not None:
        report["single_client"] = single["tools"]
        report["latency"] = compare(single, report)
    if verify_after:
        report["converge"] = await converge(run.ledger, urls[-1], config.token, concurrency)
        report["verification"] = await verify(run.ledger, urls, db_url=db_url, token=config.token,
                                              concurrency=concurrency, sample=sample, seed=config.seed)
    report["problems"] = problems(report)
    return report


def problems(report: dict[str, Any]) -> dict[str, Any]:
    """Every broken promise in a load report, by kind (empty when the run was clean)."""
    found: dict[str, Any] = {}
    if report.get("errors", {}).get("total"):
        found["errors"] = report["errors"]["by_message"]
    if report.get("transport_failures", {}).get("unexpected"):
        found["transport_failures"] = report["transport_failures"]["by_message"]
    if report.get("clients_gave_up"):
        found["clients_gave_up"] = report["clients_gave_up"]
    if report.get("anomalies"):
        found["anomalies_during_load"] = report["anomalies"]
    verification = report.get("verification") or {}
    read_back = verification.get("read_back", {})
    for kind in ("memories", "turns", "artifacts"):
        bad = {v: n for v, n in read_back.get(kind, {}).items() if v not in GOOD}
        if bad:
            found[kind] = bad
    if read_back.get("artifacts_partial"):
        found["artifacts_partial"] = read_back["artifacts_partial"]
    settled = verification.get("settle", {})
    for kind in ("unsettled", "failed"):
        if settled.get(kind):
            found[f"artifact_ingests_{kind}"] = settled[kind]
    for url, checks in verification.get("search", {}).items():
        bad = {k: v for k, v in checks.items() if k in ("missing", "resurfaced", "errors") and v}
        if bad:
            found[f"search via {url}"] = bad
    statuses = (report.get("converge") or {}).get("statuses", {})
    odd = {s: n for s, n in statuses.items() if s.startswith("known_but") or s in ("error", "delete_failed")}
    if odd:
        found["converge"] = odd
    return found


def summary(report: dict[str, Any]) -> str:
    """A short table for people: per tool latency (with the single-client p50) and what went wrong."""
    lines = [f"run {report['run']}: {report['clients']} clients x {report['ops_per_client']} ops in "
             f"{report['wall_seconds']} s ({report['ops_per_second']} ops/s, {report['calls_per_second']} calls/s), "
             f"{report['errors']['total']} errors, "
             f"{report['transport_failures']['unexpected']} transport failures "
             f"(+{report['transport_failures']['interrupted']} interrupted by a planned outage)",
             f"{'tool':<18}{'n':>6}{'single p50':>12}{'p50 ms':>10}{'p95 ms':>10}{'errors':>8}"]
    single = report.get("single_client", {})
    for tool, f in report["tools"].items():
        alone = single.get(tool, {}).get("p50_ms", "")
        lines.append(f"{tool:<18}{f['n']:>6}{alone:>12}{f.get('p50_ms', ''):>10}{f.get('p95_ms', ''):>10}"
                     f"{f['errors']:>8}")
    for message, count in report["errors"]["by_message"].items():
        lines.append(f"  error x{count}: {message}")
    for status, examples in (report.get("converge") or {}).get("examples", {}).items():
        lines += [f"  converge {status}: {example}" for example in examples]
    lines.append("problems: " + (json.dumps(report["problems"], indent=2) if report["problems"] else "none"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.load", description=__doc__.split("\n")[0])
    parser.add_argument("--url", action="append", required=True, help="MCP URL (repeat for replicas)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--ops", type=int, default=500, help="operations per client")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--token", default=None, help="bearer token (MEMTROVE_HTTP_TOKEN of the servers)")
    parser.add_argument("--baseline-ops", type=int, default=100, help="single-client ops first (0: none)")
    parser.add_argument("--database-url", default=None,
                        help="SQL store to read back from while memory_list/history_get cannot page")
    parser.add_argument("--no-verify", action="store_true", help="only the load and its latencies")
    parser.add_argument("--sample", type=int, default=None, help="search checks on at most this many items per kind")
    parser.add_argument("--out", default=None, help="write the JSON report here")
    args = parser.parse_args(argv)
    config = LoadConfig(clients=args.clients, ops=args.ops, seed=args.seed, token=args.token)
    report = asyncio.run(load_and_verify(args.url, config, db_url=args.database_url, baseline_ops=args.baseline_ops,
                                         verify_after=not args.no_verify, sample=args.sample))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=2)
    print(summary(report))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
