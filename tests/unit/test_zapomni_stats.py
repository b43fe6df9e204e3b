"""Spec 002's get_stats on the in-memory fakes: the database size counts the vector index's own files."""

from __future__ import annotations

from domain.artifacts.ingest import IngestArtifact
from domain.model import ChunkSpec
from domain.zapomni.usecases import AddMemory, GetStats, LatencyMeter
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import catalog

MB = 1_048_576


class IndexOnDisk:
    """A vector index whose files take ``size`` bytes (an embedded Chroma's directory)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def storage_bytes(self) -> int:
        return self.size


def test_zapomni_database_size_counts_the_vector_index_files(aworld) -> None:
    ingest = IngestArtifact(aworld.embedder, aworld.store, aworld.store, catalog(TokenWindowChunker()),
                            aworld.tokenizer, ChunkSpec(30, 5, 30), aworld.split)
    AddMemory(ingest)("The harbour crane is rated for 40 tonnes.", {"tags": ["harbour"]})
    stored = aworld.store.storage_bytes()
    assert stored > 0
    stats = GetStats(aworld.store, LatencyMeter(), IndexOnDisk(3 * MB))()
    assert (stats.total_memories, stats.database_size_mb) == (1, round((stored + 3 * MB) / MB, 3))
    assert GetStats(aworld.store, LatencyMeter(), IndexOnDisk(0))().database_size_mb == round(stored / MB, 3)
