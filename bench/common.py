"""What the benchmarks share: a fresh server over MCP stdio, recall@k scores, latency percentiles, tables."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from domain.search.retrieval import DEFAULT_PROFILE, PROFILES, SIGNALS

KS = (1, 5, 10, 20)
_RECALL = PROFILES[DEFAULT_PROFILE]

# Baselines as weight profiles of the bench's server: words of the record itself only (no
# neighbouring turns), and for plain RRF equal weights with k = 60.
BENCH_PROFILES = {"bench-bm25": {"lexical": 1.0, "exact": 0.0, "context": 0.0},
                  "bench-plain-rrf": {"lexical": 1.0, "semantic": 1.0, "exact": 0.0, "k": 60, "context": 0.0,
                                      "rerank": False},
                  # memtrove's default profile with the rerank stage off (the fused order; issue 43.3)
                  "bench-rerank-off": {**{s: _RECALL.of(s) for s in SIGNALS}, "k": _RECALL.k, "context": _RECALL.context,
                                       "rerank": False},
                  # memtrove's default profile (graph 0.1, dates 0.5) with the graph signal off and at two other weights
                  **{f"bench-graph-{int(w * 100):02d}": {"lexical": 0.55, "semantic": 0.3, "exact": 0.1, "k": 10,
                                                          "contextual": 0.1, "graph": w, "when": 0.5} for w in (0.0, 0.05, 0.2)},
                  # and with the date signal (0.5 in the default profile) off and at two other weights
                  **{f"bench-when-{int(w * 100):02d}": {"lexical": 0.55, "semantic": 0.3, "exact": 0.1, "k": 10,
                                                         "contextual": 0.1, "graph": 0.1, "when": w} for w in (0.0, 0.3, 0.8)}}
RERANK_OFF: dict[str, dict[str, Any]] = {"memtrove hybrid, rerank off": {"profile": "bench-rerank-off"}}
BASELINES: dict[str, dict[str, Any]] = {
    "BM25 alone": {"mode": "lexical", "profile": "bench-bm25"},
    "vectors alone": {"mode": "vector"},
    "plain RRF": {"profile": "bench-plain-rrf"},
}
# Settings of the caller's environment the bench's server keeps (the rest start from defaults).
PASSED = ("MEMTROVE_EMBEDDER", "MEMTROVE_LOCAL_MODEL", "MEMTROVE_LOCAL_THREADS", "MEMTROVE_SEARCH_PROFILE", "MEMTROVE_MIN_SIMILARITY", "MEMTROVE_CHUNKER",
          "MEMTROVE_SEMANTIC_TOP_K", "MEMTROVE_LEXICAL_TOP_K", "MEMTROVE_EXACT_TOP_K", "MEMTROVE_PER_ARTIFACT")


@asynccontextmanager
async def server(data_dir: Path, extra_env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A fresh ``memtrove serve`` of its own on ``data_dir`` (not a bridge to a shared one), as an MCP client."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from entrypoints.shared import memtrove_command

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTROVE_", "CHROMA_"))}
    weights = {**json.loads(os.environ.get("MEMTROVE_SEARCH_WEIGHTS") or "{}"), **BENCH_PROFILES}
    env.update({"MEMTROVE_DATA_DIR": str(data_dir), "MEMTROVE_SEARCH_WEIGHTS": json.dumps(weights),
                "MEMTROVE_WARMUP": "true", "LOG_LEVEL": "WARNING", "MEMTROVE_SHARED": "false",
                "MEMTROVE_CALL_BUDGET": "3600"})  # a long ingest answers when done, not "indexing"
    env.update({k: os.environ[k] for k in PASSED if os.environ.get(k)})
    env.update(extra_env or {})
    command, *prefix = memtrove_command()
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=env)
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "server.log", "a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=3600) as client:
            yield client


async def call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's structured result; a tool error stops the benchmark with its message."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    return result.structured_content or {}


def result_ids(structured: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in structured.get("results", [])]


def recall_at(ranked: Sequence[frozenset[str]], evidence: Sequence[str], k: int) -> float:
    """Share of the evidence named by the first ``k`` results (each result names the evidence it stands for)."""
    found: set[str] = set()
    for names in ranked[:k]:
        found |= names
    return len(found & set(evidence)) / len(evidence)


def percentile(ordered: Sequence[float], pct: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))]


def latency(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(percentile(ordered, 50), 2), "p95": round(percentile(ordered, 95), 2), "calls": len(ordered)}


def mean(values: Sequence[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


@dataclass
class Scores:
    """Recall@k and hit@10 averaged over questions, overall and per category; latencies in ms."""

    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    hit10: list[float] = field(default_factory=list)
    by_category: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, top10: Sequence[frozenset[str]], top20: Sequence[frozenset[str]], evidence: Sequence[str],
            category: int) -> None:
        per = self.by_category.setdefault(category, {k: [] for k in KS})
        for k in KS:
            value = recall_at(top20 if k > 10 else top10, evidence, k)
            self.recall[k].append(value)
            per[k].append(value)
        self.hit10.append(float(recall_at(top10, evidence, 10) > 0))

    def summary(self) -> dict[str, Any]:
        return {
            "questions": len(self.hit10),
            **{f"recall@{k}": mean(v) for k, v in self.recall.items()},
            "hit@10": mean(self.hit10),
            "by_category": {str(c): {f"recall@{k}": mean(v) for k, v in r.items()} | {"questions": len(r[1])}
                            for c, r in sorted(self.by_category.items())},
            "latency_ms": latency(self.latency_ms),
        }


def recall_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """One row per configuration (recall@k, hit@10, latency), then recall@10 per question category."""
    head = f"{'configuration':<22}" + "".join(f"{f'R@{k}':>8}" for k in KS) + f"{'hit@10':>8}{'p50 ms':>9}{'p95 ms':>9}"
    lines = [head, "-" * len(head)]
    for name, r in results.items():
        lines.append(f"{name:<22}" + "".join(f"{r[f'recall@{k}']:>8.3f}" for k in KS)
                     + f"{r['hit@10']:>8.3f}{r['latency_ms']['p50']:>9.1f}{r['latency_ms']['p95']:>9.1f}")
    categories = sorted({c for r in results.values() for c in r["by_category"]})
    lines += ["", f"{'recall@10 by category':<22}" + "".join(f"{f'cat {c}':>9}" for c in categories)]
    for name, r in results.items():
        lines.append(f"{name:<22}" + "".join(f"{r['by_category'][c]['recall@10']:>9.3f}" for c in categories))
    first = next(iter(results.values()))
    lines.append(f"{'questions':<22}" + "".join(f"{first['by_category'][c]['questions']:>9}" for c in categories))
    return lines


@contextmanager
def store_dir(keep: Path | None, prefix: str) -> Iterator[Path]:
    """``keep`` (created if need be), else a temporary folder removed afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def per_second(count: int, ms: Sequence[float]) -> float:
    """Items a second over the calls that stored them (0 when nothing was stored in this run)."""
    return round(count / (sum(ms) / 1000), 2) if ms and sum(ms) else 0.0


def server_process() -> Any:
    """The ``memtrove serve`` this process started (bench.common.server), as a psutil process."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        if "serve" in child.cmdline():
            return child
    raise RuntimeError("the memtrove server process was not found among this process's children")


def peak_mb(process: Any) -> float:
    """A process's peak RSS (VmHWM) in MB."""
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def server_peak_rss_mb() -> float:
    """The bench's server's peak RSS, read before it stops."""
    return peak_mb(server_process())


def run_and_report(run: Callable[[dict[str, dict[str, Any]], Path, Callable[[str], None]], Awaitable[dict[str, Any]]],
                   table: Callable[[dict[str, Any]], str], configs: dict[str, dict[str, Any]], chosen: Sequence[str],
                   store: Path | None, prefix: str, out: Path | None, models: Sequence[str] = ()) -> int:
    """A benchmark's command: the chosen configurations (all when none) run on a kept or temporary
    store, progress on stderr, the table printed and the JSON report written. With ``models``, the
    whole benchmark runs once per local model, one after the other in this run, each on a store of
    its own (``<store>/<model>``), and the tables are printed one after the other."""
    import anyio

    picked = {name: configs[name] for name in (chosen or configs)}
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if not models:
        with store_dir(store, prefix) as data_dir:
            report = anyio.run(lambda: run(picked, data_dir, say))
        write_report(report, table(report), out)
        return 0
    reports: dict[str, dict[str, Any]] = {}
    before = os.environ.get("MEMTROVE_LOCAL_MODEL")
    try:
        with store_dir(store, prefix) as root:
            for model in models:
                os.environ["MEMTROVE_LOCAL_MODEL"] = model
                say(f"== local model {model}")
                reports[model] = anyio.run(lambda: run(picked, root / model, say))
    finally:
        os.environ.pop("MEMTROVE_LOCAL_MODEL", None)
        if before is not None:
            os.environ["MEMTROVE_LOCAL_MODEL"] = before
    text = "\n\n".join(f"== local model {model}\n{table(report)}" for model, report in reports.items())
    write_report({"models": reports}, text, out)
    return 0


def write_report(report: dict[str, Any], text: str, out: Path | None) -> None:
    print(text)
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nJSON written to {out}")
