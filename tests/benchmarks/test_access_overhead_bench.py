"""What enforcing who-may-see-what costs a search: hybrid_search with the access rule (inside the index
queries and on the rows) against the same search with the rule bypassed, on the same store, interleaved.

The store: real SQLite + embedded Chroma through the real container, a hashing embedder (the figures
are the storage and search path, not a model); artifacts of three owners at every visibility, ~20
chunks each (full: 20,000 chunks, or MEMTROVE_ACCESS_CHUNKS; smoke: 400). The caller is alice (team eng), who may see about
half. Target (issue 13): enforcement at most 10% slower, asserted under ./scripts/bench only.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Iterator


import pytest
from dependency_injector import providers

from adapters import request_scope
from adapters.memory.basics import HashEmbedder
from config.settings import Settings
from domain.access.principal import Principal
from domain.artifacts.input import IngestRequest
from domain.search import ranking, retrieve
from domain.search.usecases import HybridSearch, SearchRequest
from entrypoints.runtime import Runtime
from tests.benchmarks.conftest import assert_timing, percentiles, size


CHUNKS = size(int(os.environ.get("MEMTROVE_ACCESS_CHUNKS", "20000")), 400)  # the figure: 100000
PER_ARTIFACT = 20
WORDS = ("harbour lighthouse keeper lantern ferry timetable invoice budget engineer scaffolding paint rust "
         "gallery railing heritage office photos lens motor warranty bulbs crew inspection report season "
         "tower storm pier reopening logbook clockwork wick dusk").split()
OWNERS = {"alice": Principal("alice", teams=("eng",), org="acme"), "bob": Principal("bob", teams=("eng",), org="acme"),
          "carol": Principal("carol", teams=("ops",), org="acme")}


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = Runtime(Settings(memtrove_data_dir=tmp_path_factory.mktemp("access") / "data", memtrove_warmup=False))
    rt.app.adapters.embedder.override(providers.Object(HashEmbedder(dimensions=64, max_tokens=256)))
    rt.start()
    rt.ensure_ready()
    rng = random.Random(11)
    ingest = rt.app.use_cases.ingest_artifact()
    started = time.perf_counter()
    chunks, n = 0, 0
    while chunks < CHUNKS:  # as many chunks as asked, whatever the chunker makes of each document
        owner = list(OWNERS)[n % 3]
        text = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(110)) + "." for _ in range(PER_ARTIFACT))
        scope = ["me", "team", "org", "custom"][n % 4]
        with request_scope.scope(OWNERS[owner]):
            done = ingest(IngestRequest("doc", "wiki", text, source_id=f"doc-{n}", visibility_scope=scope,
                                        visible_to=["alice"] if scope == "custom" else None))
        chunks, n = chunks + done.artifact.num_chunks, n + 1
    rt.app.use_cases.sync_vectors().drain()
    print(f"\n[access] built {chunks} chunks ({n} documents) in {time.perf_counter() - started:.0f} s")
    yield rt
    rt.shutdown()


def test_search_with_and_without_the_access_rule(runtime: Runtime, report, monkeypatch: pytest.MonkeyPatch) -> None:
    search: HybridSearch = runtime.app.use_cases.hybrid_search()
    rng = random.Random(5)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(size(60, 6))]
    enforced: list[float] = []
    bypassed: list[float] = []
    real_restrict, real_visible = retrieve.restrict, ranking.visible

    def run(query: str, on: bool) -> int:
        if not on:
            monkeypatch.setattr(retrieve, "restrict", lambda where, context, now: dict(where or {}))
            monkeypatch.setattr(ranking, "visible", lambda fields, context, now: True)
        try:
            with request_scope.scope(OWNERS["alice"]):
                started = time.perf_counter()
                hits = search(SearchRequest(query, limit=10)).hits
                (enforced if on else bypassed).append(time.perf_counter() - started)
                return len(hits)
        finally:
            monkeypatch.setattr(retrieve, "restrict", real_restrict)
            monkeypatch.setattr(ranking, "visible", real_visible)

    for query in queries[:2]:  # warm both paths
        run(query, True), run(query, False)
    enforced.clear(), bypassed.clear()
    for n, query in enumerate(queries):  # interleaved, alternating which goes first
        for on in ((True, False) if n % 2 else (False, True)):
            assert run(query, on) > 0
    on, off = statistics.median(enforced), statistics.median(bypassed)
    report(chunks=CHUNKS, enforced=percentiles(enforced), bypassed=percentiles(bypassed),
           ratio_p50=round(on / off, 3))
    assert_timing(on <= 1.10 * off, f"the access rule costs {on / off:.2f}x a search without it (target <= 1.10)")
