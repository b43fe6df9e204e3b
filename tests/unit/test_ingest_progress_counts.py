"""An ingest's progress counts chunks, as its total does, also when a chunk is embedded in several pieces
(the model would truncate it): done never passes total, for a caller waiting, for artifact_get reading
the job, and for a job resumed after a crash (issue 42: "indexing: 254 of 146 chunks embedded")."""

from __future__ import annotations

import pytest

from adapters.memory.basics import HashEmbedder, WordTokenizer
from adapters.memory.scopes import InMemoryStore
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest
from domain.artifacts.usecases import GetArtifact
from domain.model import ChunkSpec
from domain.pieces import PieceSplitter
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import Crash, catalog

# Chunks of 30 words for a model that reads 12 tokens: each chunk is embedded in three or four pieces.
TEXT = " ".join(f"w{i}" for i in range(400))
DOC = IngestRequest("doc", "drive", TEXT, source_id="long.txt")


class Progress:
    detached = False

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def __call__(self, artifact_id: str, done: int, total: int) -> None:
        self.seen.append((done, total))


def worker(store: InMemoryStore, checkpoint=lambda _: None, at: float = 1_000.0) -> IngestArtifact:
    embedder = HashEmbedder(dimensions=16, max_tokens=12)
    split = PieceSplitter(embedder, TokenWindowChunker(), _tokenizer(), ChunkSpec(30, 5, 30))
    return IngestArtifact(embedder, store, store, catalog(TokenWindowChunker()), _tokenizer(), ChunkSpec(30, 5, 30),
                          split, embed_batch=8, now=lambda: at, checkpoint=checkpoint)


def _tokenizer() -> WordTokenizer:
    return WordTokenizer()


def test_a_chunk_in_many_pieces_counts_once() -> None:
    store, progress, read = InMemoryStore(), Progress(), []

    def reads_the_job(point: str) -> None:  # what artifact_get shows between batches
        if point.startswith("vectors_"):
            job = GetArtifact(store)(next(iter(store.open_jobs())).artifact_id).job
            read.append((job.done, job.total))

    ingest = worker(store, reads_the_job)
    result = ingest(DOC, progress)
    chunks = len(result.chunks)
    pieces = sum(len(ingest.split(c.content)) for c in result.chunks)
    assert pieces > 2 * chunks  # the case of the issue: more pieces than chunks
    counted = [p for p in progress.seen if p[1]]
    assert counted and all(0 <= done <= total == chunks for done, total in counted)
    assert counted[-1] == (chunks, chunks)
    assert [d for d, _ in counted] == sorted(d for d, _ in counted)
    assert read and all(0 < done <= total == chunks for done, total in read)


def test_a_resumed_job_counts_chunks_too() -> None:
    store = InMemoryStore()

    def crash_after_two_batches(point: str) -> None:
        if point == "vectors_1":
            raise Crash(point)

    with pytest.raises(Crash):
        worker(store, crash_after_two_batches)(DOC)
    job = next(iter(store.open_jobs()))
    assert 0 < job.done < job.total  # stored as chunks done, not pieces
    progress = Progress()
    result = worker(store, at=1_000.0 + 61)(DOC, progress)
    assert result.status == "ingested"
    assert all(0 <= done <= total == len(result.chunks) for done, total in progress.seen if total)
    assert progress.seen[-1] == (len(result.chunks), len(result.chunks))
