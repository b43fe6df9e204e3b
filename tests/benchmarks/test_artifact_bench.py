"""Artifact benchmarks: ingest throughput vs the raw embedder, chunking vs tiktoken, hybrid_search latency."""

from __future__ import annotations

from collections import Counter

import random
import statistics
import time
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.text.tokenizers import TiktokenTokenizer
from config.settings import Settings
from domain.chunking import content_hash
from domain.ids import chunk_id, piece_id
from domain.model import Artifact, ArtifactChunk, AuditEntry, EmbeddingProfile, IngestJob, VectorRecord
from domain.artifacts.input import IngestRequest
from domain.search.retrieve import Retriever
from domain.search.usecases import HybridSearch, SearchRequest
from entrypoints.runtime import Runtime
from plugins.chunkers.token_window import TokenWindowChunker
from tests.benchmarks.conftest import measure, percentiles, size

TOPICS = ["budget", "hiring", "launch", "migration", "incident", "contract", "roadmap", "travel", "security",
          "pricing", "onboarding", "database", "latency", "invoice", "vendor", "audit", "design", "testing"]
VERBS = ["reviewed", "approved", "delayed", "escalated", "documented", "questioned", "summarised", "shipped"]


def prose(rng: random.Random, words: int) -> str:
    out: list[str] = []
    while len(out) < words:
        out += (f"The {rng.choice(TOPICS)} team {rng.choice(VERBS)} the {rng.choice(TOPICS)} plan for "
                f"{rng.choice(TOPICS)} on day {rng.randrange(1, 400)}.").split()
    return " ".join(out[:words])


def runtime(data_dir: Path) -> Runtime:
    rt = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False))
    rt.start()
    rt.ensure_ready()
    return rt


def corpus(count: int) -> list[IngestRequest]:
    """Mixed sizes: 70% short notes (stored whole), 25% medium docs, 5% long docs."""
    rng = random.Random(3)
    docs = []
    for i in range(count):
        roll = rng.random()
        words = 60 if roll < 0.7 else (300 if roll < 0.95 else 1500)
        kind = "note" if words == 60 else "doc"
        docs.append(IngestRequest(kind, "bench", prose(rng, words), source_id=f"doc-{i}", title=f"Doc {i}"))
    return docs


def test_ingest_throughput_vs_raw_embedder(benchmark, report, tmp_path: Path) -> None:
    docs = corpus(size(1000, 30))
    rt = runtime(tmp_path)
    ingest, embedder = rt.app.use_cases.ingest_artifact(), rt.app.adapters.embedder()
    spec, tokenizer, split = rt.app.use_cases.chunk_spec(), rt.app.adapters.tokenizer(), rt.app.use_cases.split()
    chunker = TokenWindowChunker()
    pieces: list[str] = []
    for doc in docs:
        texts = [doc.content] if tokenizer.count(doc.content) <= spec.single_piece_max_tokens else [
            c.content for c in chunker.chunk(doc.content, spec, tokenizer)]
        pieces += [p.content for text in texts for p in split(text)]
    embedder.embed_query("load the model first")
    started = time.perf_counter()
    for start in range(0, len(pieces), 128):
        embedder.embed_documents(pieces[start:start + 128])
    raw_s = time.perf_counter() - started
    sync = rt.app.use_cases.sync_vectors()
    # Until its vectors are in the index an ingest is not searchable: the index's writes are counted.
    samples = measure(benchmark, lambda: ([ingest(doc) for doc in docs], sync.catch_up()), 1)
    ingest_s = samples[0]
    chunks = rt.app.adapters.vectors().count("chunk") + rt.app.adapters.vectors().count("artifact")
    assert chunks == len(pieces)
    report(artifacts=len(docs), pieces=len(pieces), raw_pieces_per_s=round(len(pieces) / raw_s, 1),
           ingest_pieces_per_s=round(len(pieces) / ingest_s, 1), ratio=round(raw_s / ingest_s, 3), target=0.8)
    rt.shutdown()


def test_chunking_10mb_vs_one_tiktoken_encode(benchmark, report) -> None:
    text = prose(random.Random(5), 2_000_000)[:size(10_000_000, 1_000_000)]
    tokenizer = TiktokenTokenizer()
    spec = Settings(memtrove_embedder="openai").chunk_spec(EmbeddingProfile("openai", "m", 3072, 8191))
    encodes = []
    for _ in range(size(3, 1)):
        started = time.perf_counter()
        tokenizer._encoding.encode_ordinary(text)
        encodes.append(time.perf_counter() - started)
    chunker = TokenWindowChunker()
    samples = measure(benchmark, lambda: chunker.chunk(text, spec, tokenizer), size(3, 1))
    report(chars=len(text), encode_s=round(statistics.median(encodes), 3),
           chunk_s=round(statistics.median(samples), 3),
           ratio=round(statistics.median(samples) / statistics.median(encodes), 2), target=3)


class FixedQuery:
    """The real embedder with the query vector computed once: isolates search from embedding."""

    def __init__(self, embedder, query: str) -> None:
        self.inner, self.vector, self.profile = embedder, embedder.embed_query(query), embedder.profile

    def embed_query(self, _: str) -> list[float]:
        return self.vector


def seed_chunks(rt: Runtime, total: int) -> None:
    """``total`` committed chunks in 100-chunk artifacts; vectors are real embeddings of a sentence pool,
    written as an ingest writes them (stored with the pending version, indexed from the outbox)."""
    rng = random.Random(9)
    embedder, store = rt.app.adapters.embedder(), rt.app.adapters.store()
    pool_text = [prose(rng, 25) for _ in range(size(2_000, 200))]
    pool = embedder.embed_documents(pool_text)
    for a in range(total // 100):
        art_id = f"art_{a:032x}"
        digest = content_hash(art_id)
        artifact = Artifact(art_id, "doc", "bench", f"s{a}", None, f"Doc {a}", None, (), "2025-01-01T00:00:00Z",
                            digest, 20_000, True, 100, "normal", "me", "forever", "2025-01-01T00:00:00Z",
                            "token-window", "1", embedder.profile)
        chunks, records = [], []
        for i in range(100):
            k = rng.randrange(len(pool))
            cid = chunk_id(art_id, i, content_hash(pool_text[k] + str(i)))
            chunks.append(ArtifactChunk(cid, art_id, i, i * 150, i * 150 + 150, pool_text[k], 40, "0" * 64))
            records.append(VectorRecord(piece_id(cid, digest, 0), cid, pool[k], {
                "artifact_id": art_id, "artifact_type": "doc", "source_system": "bench", "sensitivity": "normal",
                "visibility_scope": "me", "ts_epoch": 1735689600.0, "chunk_index": i, "version": digest[:12],
                "piece": 0}))
        entry = AuditEntry("ingest", "artifact", (art_id,), "bench", "2025-01-01T00:00:00Z")
        job = IngestJob(art_id, artifact.version, "indexing", 0, len(chunks), lease_owner="bench",
                        lease_until=time.time() + 3600)
        store.begin_artifact(artifact, chunks, entry, job)
        assert store.add_pending_vectors(replace(job, done=len(chunks)), "chunk", records)
        store.commit_artifact(art_id, artifact.version, entry)
    rt.app.use_cases.sync_vectors().catch_up()
    assert rt.app.adapters.vectors().count("chunk") == total


@pytest.mark.parametrize("total", [size(10_000, 1_000), size(100_000, 2_000)])
def test_hybrid_search_latency(benchmark, report, tmp_path: Path, total: int) -> None:
    rt = runtime(tmp_path)
    seed_chunks(rt, total)
    uc = rt.app.use_cases.hybrid_search()
    queries = ["who approved the budget plan", "security incident escalated", "database latency review"]
    uc(SearchRequest(queries[0], limit=10))  # warm caches and the model
    rounds = size(100, 10)
    included = measure(benchmark, lambda: uc(SearchRequest(random.choice(queries), limit=10)), rounds)
    fixed = FixedQuery(rt.app.adapters.embedder(), queries[1])
    excluded_uc = HybridSearch(Retriever(fixed, uc.retrieve.ranker, uc.retrieve.config), uc.artifacts)
    excluded = measure(_Plain(), lambda: excluded_uc(SearchRequest(queries[1], limit=10)), rounds)
    hits = excluded_uc(SearchRequest(queries[1], limit=10, per_artifact=1)).hits
    assert len(hits) == 10 and len({h.fields["artifact_id"] for h in hits}) == 10
    capped = excluded_uc(SearchRequest(queries[1], limit=10)).hits  # the default: up to 3 passages a document
    assert len(capped) == 10 and max(Counter(h.fields["artifact_id"] for h in capped).values()) <= 3
    report(chunks=total, included=percentiles(included), excluded=percentiles(excluded), target_p95_excluded_ms=50)
    rt.shutdown()


class _Plain:
    disabled = True
