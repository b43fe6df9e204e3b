"""PgVectorIndex (PostgreSQL + pgvector HNSW) beside ChromaVectorIndex (embedded) on the same vectors.

N random unit vectors of 384 dimensions (100,000 under ./scripts/bench, 2,000 in the smoke run) go
into both indexes; 200 queries ask each for its 10 nearest, interleaved (pgvector, then Chroma, per
query) so whatever else the machine does hits both alike. Figures: load seconds, p50/p95 query
latency, and recall@10 against the exact answer (numpy brute force over the same float32 vectors).
Recall >= 0.9 is asserted for both under ./scripts/bench only (the smoke size says nothing of it).

The vectors are random but shaped like embeddings: a random 16-dimensional latent point mapped into
384 dimensions by one random matrix, plus isotropic noise, normalised. Uniform random unit vectors
in 384 dimensions have no neighbourhoods (the exact top 10 are barely nearer than any other point):
at 100,000 of them recall@10 was 0.04 for pgvector (ef_search 40) and 0.12 for Chroma, which says
nothing of either index on real embeddings. With a 32-dimensional latent pgvector's was 0.73 at
ef_search 40, 0.90 at 100, 0.98 at 200 (m 12, ef_construction 48).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from adapters.vectors.chroma import ChromaVectorIndex
from adapters.vectors.pgvector import PgVectorIndex, ef_search_for, hnsw_parameters
from domain.errors import StorageError
from domain.model import EmbeddingProfile, VectorRecord
from domain.ports import VectorIndex
from tests.contract.test_pgvector_index import explain
from tests.benchmarks.conftest import FULL, assert_timing, measure, percentiles, size

pytestmark = pytest.mark.slow

DIMS = 384
N = size(100_000, 2_000)
QUERIES = 200
K = 10
LOAD_PAGE = 5_000
PROFILE = EmbeddingProfile("bench", "random-unit", DIMS, 256)
MIN_RECALL = 0.9
LATENT, NOISE = 16, 0.2


def embedding_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` unit vectors on a random 16-dimensional subspace of 384, blurred by noise."""
    basis = rng.standard_normal((DIMS, LATENT)).astype(np.float32) / np.sqrt(LATENT)
    rows = rng.standard_normal((n, LATENT)).astype(np.float32) @ basis.T
    rows += NOISE * rng.standard_normal((n, DIMS)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def vid(i: int) -> str:
    return f"v{i}::1::0"


def load(index: VectorIndex, data: np.ndarray) -> float:
    """Upsert every vector, a page of Python lists at a time (100,000 x 384 floats at once is 1 GB)."""
    started = time.perf_counter()
    for start in range(0, len(data), LOAD_PAGE):
        page = data[start:start + LOAD_PAGE].tolist()
        index.upsert("chunk", [VectorRecord(vid(start + i), f"v{start + i}", vector, {"n": start + i})
                               for i, vector in enumerate(page)])
    return time.perf_counter() - started


def exact_top(data: np.ndarray, queries: np.ndarray) -> list[set[str]]:
    scores = queries @ data.T  # unit vectors: cosine = dot product
    top = np.argpartition(-scores, K, axis=1)[:, :K]
    return [{vid(int(i)) for i in row} for row in top]


def recall(found: list[list[str]], exact: list[set[str]]) -> float:
    return round(float(np.mean([len(set(f) & e) / K for f, e in zip(found, exact, strict=True)])), 4)


@pytest.fixture
def pg_index(postgres_url: str):
    from tests.support.postgres import fresh_database

    index = PgVectorIndex(PROFILE, fresh_database(postgres_url))
    try:
        index.count("chunk")
    except StorageError as exc:
        index.close()
        pytest.skip(f"no pgvector on the test server: {exc}")
    yield index
    index.close()


def test_pgvector_beside_chroma(pg_index: PgVectorIndex, tmp_path: Path, benchmark, report) -> None:
    rng = np.random.default_rng(2024)
    everything = embedding_like(rng, N + QUERIES)
    data, queries = everything[:N], everything[N:]
    chroma = ChromaVectorIndex(PROFILE, path=str(tmp_path / "chroma"))
    pg_load, chroma_load = load(pg_index, data), load(chroma, data)
    with pg_index._engine.begin() as conn:  # what autovacuum would do soon after a bulk load
        conn.exec_driver_sql(f"ANALYZE {pg_index.table}")
    assert pg_index.count("chunk") == N and chroma.count("chunk") == N
    probes = queries.tolist()
    pg_index.query("chunk", probes[0], K), chroma.query("chunk", probes[0], K)  # warm both up

    found: dict[str, list[list[str]]] = {"pgvector": [], "chroma": []}
    seconds: dict[str, list[float]] = {"pgvector": [], "chroma": []}
    turn = iter(range(QUERIES))
    indexes: tuple[tuple[str, VectorIndex], ...] = (("pgvector", pg_index), ("chroma", chroma))

    def one_query_each() -> None:
        q = probes[next(turn)]
        for name, index in indexes:
            started = time.perf_counter()
            hits = index.query("chunk", q, K)
            seconds[name].append(time.perf_counter() - started)
            found[name].append([h.id for h in hits])

    measure(benchmark, one_query_each, QUERIES)
    assert all(len(ids) == K for ids in found["pgvector"] + found["chroma"])
    exact = exact_top(data, queries)
    pg_recall, chroma_recall = recall(found["pgvector"], exact), recall(found["chroma"], exact)
    pg_times, chroma_times = percentiles(seconds["pgvector"]), percentiles(seconds["chroma"])
    m, ef_construction = hnsw_parameters(DIMS)
    plan = explain(pg_index, "chunk", K)
    report(vectors=N, dims=DIMS, queries=QUERIES, k=K, full=FULL,
           pgvector_hnsw=f"m={m} ef_construction={ef_construction} ef_search={ef_search_for(K)}",
           pgvector_load_s=round(pg_load, 1), chroma_load_s=round(chroma_load, 1),
           pgvector_p50_ms=pg_times["p50_ms"], pgvector_p95_ms=pg_times["p95_ms"],
           chroma_p50_ms=chroma_times["p50_ms"], chroma_p95_ms=chroma_times["p95_ms"],
           pgvector_recall_at_10=pg_recall, chroma_recall_at_10=chroma_recall,
           pgvector_plan=plan.splitlines()[1].strip())
    assert f"Index Scan using {pg_index.table}_chunk_hnsw" in plan  # the HNSW graph answered
    if FULL:
        assert pg_recall >= MIN_RECALL, f"pgvector recall@10 {pg_recall} < {MIN_RECALL}"
        assert chroma_recall >= MIN_RECALL, f"Chroma recall@10 {chroma_recall} < {MIN_RECALL}"
    assert_timing(pg_times["p95_ms"] < 100, f"pgvector p95 {pg_times['p95_ms']} ms at {N} vectors")
