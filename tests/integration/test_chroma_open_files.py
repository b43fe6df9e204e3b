"""Embedded Chroma keeps each collection's HNSW index in a per-process cache sized from the open-files limit.

chromadb 1.5.9 sizes that cache as ``RLIMIT_NOFILE // 5`` (chromadb/api/rust.py) spread over 64 shards
(rust/cache/src/foyer.rs), and drops an index from it without writing it (the eviction only closes its
files: rust/segment/src/local_segment_manager.rs). A collection under ``hnsw:sync_threshold`` (1,000)
vectors has never been written, and Chroma catches it up from its log once per process; a search of it
after an eviction reads the disk and fails with "Error creating hnsw segment reader: Nothing found on
disk". Real processes: one stores a few vectors in each of many collections (more than the cache holds
at a soft limit of 256), then a second one, as after a restart, searches them all in turn, twice.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.vectors.chroma import ChromaVectorIndex
from domain.model import EmbeddingProfile, VectorRecord
from domain.upkeep.vector_sync import COLLECTIONS

LOW = 256  # Chroma's cache: 51 indexes over 64 shards, so each shard keeps one: 70 collections cannot all stay
PROFILES = [EmbeddingProfile("fake", f"nofile-{p}", 8, 64) for p in range(14)]  # x 5 collections each
_, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)


def records(profile: EmbeddingProfile, collection: str) -> list[VectorRecord]:
    rng = random.Random(f"{profile.key}/{collection}")
    return [VectorRecord(f"mem_{i:032x}::0", f"mem_{i:032x}", [rng.uniform(-1, 1) for _ in range(8)],
                         {"sensitivity": "normal", "scope": "me"}) for i in range(3)]


def source(profile: EmbeddingProfile):
    def page(collection: str, after: str, limit: int) -> list[VectorRecord]:
        return [r for r in records(profile, collection) if r.id > after][:limit]
    return page


def child(path: str, soft: int, hard: int, step: str, with_source: bool) -> dict[str, Any]:
    """In a process whose open-files limit is (soft, hard): ``fill`` every collection, or ``search`` them in turn."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    indexes = [ChromaVectorIndex(p, path=path, source=source(p) if with_source else None) for p in PROFILES]
    failures, wrong = [], 0
    for _ in range(2 if step == "search" else 1):
        for index in indexes:
            for collection in COLLECTIONS:
                stored = records(index.profile, collection)
                if step == "fill":
                    index.upsert(collection, stored)
                    continue
                try:
                    found = index.query(collection, stored[1].vector, 1)
                    wrong += found[0].id != stored[1].id
                except Exception as exc:  # noqa: BLE001 - what a caller would have been answered
                    failures.append(f"{collection}/{index.profile.key}: {exc}")
    return {"failures": failures, "wrong": wrong, "soft": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "restored": sum(sum(i._restored.values()) for i in indexes)}


def run(path: Path, soft: int, hard: int, step: str, with_source: bool = False) -> tuple[dict[str, Any], str]:
    code = ("import sys, json; sys.path[:0] = json.loads(sys.argv[1]);"
            "from tests.integration.test_chroma_open_files import child;"
            "print('RESULT', json.dumps(child(*json.loads(sys.argv[2]))))")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(sys.path),
                           json.dumps([str(path), soft, hard, step, with_source])],
                          capture_output=True, text=True, timeout=600, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT ")), done.stderr


@pytest.mark.skipif(HARD != resource.RLIM_INFINITY and HARD < 4096,
                    reason="the hard open-files limit here leaves no room to raise the soft one")
def test_a_low_open_files_limit_is_raised_so_no_collection_falls_out_of_chromas_cache(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    run(path, LOW, HARD, "fill")
    searched, _ = run(path, LOW, HARD, "search")  # as a server restarted in the same shell
    assert searched["failures"] == [] and searched["wrong"] == 0, searched
    assert searched["soft"] > LOW


def test_a_search_that_meets_a_collection_fallen_out_of_the_cache_rebuilds_it_and_is_answered(tmp_path: Path) -> None:
    # The hard limit is the soft one: nothing can be raised, so the cache keeps one index a shard.
    path = tmp_path / "chroma"
    run(path, LOW, LOW, "fill")
    searched, log = run(path, LOW, LOW, "search", with_source=True)
    assert searched["failures"] == [] and searched["wrong"] == 0, searched
    assert searched["restored"] >= 1  # 70 collections, 64 shards of one: some were evicted, and rebuilt
    assert searched["soft"] == LOW
    assert "open-files limit" in log  # the start says why, and what to raise


def test_without_a_copy_an_evicted_collection_fails_with_the_way_out(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    run(path, LOW, LOW, "fill")
    searched, _ = run(path, LOW, LOW, "search")
    assert searched["failures"], "70 collections in 64 one-index shards: some search meets an evicted one"
    assert all("doctor --rebuild-vectors" in f for f in searched["failures"]), searched["failures"]
