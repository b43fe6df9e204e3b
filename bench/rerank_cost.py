"""What the rerank stage costs at 10k chunks: the same searches with the stage on and off, in one run.

    python -m bench.rerank_cost --store DIR [--queries 100] [--dimensions 256]

``DIR`` is a store ``memtrove-bench scale --chunks 10000 --store DIR`` built (SQLite + embedded Chroma, the
stand-in bag-of-words embedder, documentation and LoCoMo sessions in 300-token chunks). Its hybrid searches
(the scale bench's queries, limit 10, the default profile) run in this process through the server's composition
root, alternating stage on and off per query; the stage itself (features, scoring, reordering) is timed inside
the same searches. Reported: the median search with the stage on and off, the median stage, and its share of a
search (the issue's bound: at most 30%).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import domain.search.retrieve as retrieve_module
from bench.scale_corpus import DOCS, originals, queries
from bench.standin import StandinEmbeddings

LOCOMO = Path("/work/shared/locomo")
WARMUP = 5


def measure(store: Path, count: int, dims: int) -> dict[str, Any]:
    from config.container import Application
    from config.settings import Settings
    from domain.search.retrieval import PROFILES
    from domain.search.usecases import HybridSearch, SearchRequest

    asked = queries(originals(DOCS, LOCOMO), LOCOMO, count)
    stage_ms: list[float] = []
    original = retrieve_module.rerank

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            stage_ms.append((time.perf_counter() - started) * 1000)

    recall = PROFILES["recall"]
    off = {"lexical": recall.lexical, "semantic": recall.semantic, "exact": recall.exact, "k": recall.k,
           "contextual": recall.contextual, "graph": recall.graph, "when": recall.when, "symbol": recall.symbol,
           "rerank": False}
    with StandinEmbeddings(dims) as embeddings:
        settings = Settings(memtrove_data_dir=store, memtrove_embedder="openai-compatible",
                            openai_base_url=embeddings.url, openai_api_key="standin",
                            openai_embed_model=f"standin-bow-{dims}", openai_embed_dims=dims,
                            chunk_target_tokens=300, memtrove_search_weights={"rerank-off": off})
        app = Application(settings=settings)
        search: HybridSearch = app.use_cases.hybrid_search()
        times: dict[str, list[float]] = {"on": [], "off": []}
        retrieve_module.rerank = timed  # type: ignore[assignment]
        try:
            for n, query in enumerate(asked[:WARMUP] + asked):
                order = ("on", "off") if n % 2 == 0 else ("off", "on")
                for which in order:
                    before = len(stage_ms)
                    started = time.perf_counter()
                    search(SearchRequest(query=query[:500], limit=10, profile=None if which == "on" else "rerank-off"))
                    took = (time.perf_counter() - started) * 1000
                    if n >= WARMUP:
                        times[which].append(took)
                    if n < WARMUP or which == "off":
                        del stage_ms[before:]  # the off searches run no stage; warm-up is not counted
        finally:
            retrieve_module.rerank = original  # type: ignore[assignment]
            app.shutdown_resources()
    on, off_ms, stage = (statistics.median(times["on"]), statistics.median(times["off"]), statistics.median(stage_ms))
    return {"store": str(store), "queries": len(asked), "search_on_p50_ms": round(on, 2),
            "search_off_p50_ms": round(off_ms, 2), "stage_p50_ms": round(stage, 2),
            "stage_share_of_search_p50": round(stage / on, 3), "on_over_off_p50": round(on / off_ms, 3),
            "stage_p95_ms": round(sorted(stage_ms)[int(0.95 * (len(stage_ms) - 1))], 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rerank_cost")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dimensions", type=int, default=256)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.store, args.queries, args.dimensions), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
