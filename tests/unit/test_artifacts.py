"""Artifact use cases on the in-memory fakes: idempotency, replacement, two-phase writes, search."""

from __future__ import annotations

import pytest

from domain.errors import EmbeddingError, NotFoundError, StorageError, ValidationError
from domain.model import ChunkSpec
from domain.usecases.artifacts import DeleteArtifact, GetArtifact, IngestArtifact, IngestRequest, reconstruct
from domain.usecases.maintenance import RepairStores
from domain.usecases.search import ArtifactSearch, HybridSearch, SearchRequest
from tests.conftest import catalog, searcher
from plugins.chunkers.token_window import TokenWindowChunker

LONG = " ".join(f"word{i}" for i in range(300)) + " the launch code is zebra " + " ".join(
    f"tail{i}" for i in range(100))


def ingest_uc(w, **kw):
    return IngestArtifact(w.embedder, w.vectors, w.artifacts, catalog(TokenWindowChunker()), w.tokenizer,
                          ChunkSpec(30, 5, 30), w.split, **kw)


def hybrid(w):
    return HybridSearch(searcher(w), w.artifacts)


def test_small_artifact_is_stored_whole(aworld) -> None:
    result = ingest_uc(aworld)(IngestRequest("note", "manual", "buy oat milk"))
    assert result.status == "ingested" and not result.artifact.is_chunked
    assert result.stored_ids == [result.artifact.id] and len(result.artifact.id) == 36
    assert aworld.vectors.count("artifact") == 1 and aworld.vectors.count("chunk") == 0


def test_large_artifact_is_chunked_with_stable_ids(aworld) -> None:
    first = ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert first.artifact.is_chunked and first.artifact.num_chunks == len(first.chunks) > 5
    for i, chunk in enumerate(first.chunks):
        assert chunk.id == f"{first.artifact.id}::chunk::{i:03d}::{chunk.content_hash[:8]}"
    assert reconstruct(first.chunks) == LONG


def test_same_source_same_content_is_a_no_op(aworld) -> None:
    ingest = ingest_uc(aworld)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    calls = len(aworld.embedder.calls)
    again = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert again.status == "unchanged" and again.stored_ids == first.stored_ids
    assert len(aworld.embedder.calls) == calls


def test_changed_content_replaces_every_chunk_and_vector(aworld) -> None:
    ingest = ingest_uc(aworld)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    second = ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "giraffe"), source_id="d1"))
    assert second.status == "replaced" and second.artifact.id == first.artifact.id
    versions = {vid.rsplit("::", 2)[-2] for vid in aworld.vectors.all_vectors("chunk")}
    assert versions == {second.artifact.version}
    view = GetArtifact(aworld.artifacts)(first.artifact.id, include_content=True)
    assert "giraffe" in view.content and "zebra" not in view.content
    assert RepairStores(aworld.store, aworld.vectors, aworld.artifacts)().stale_vectors_removed == 0


def test_embedding_failure_part_way_writes_nothing(aworld) -> None:
    aworld.embedder.fail_after = 2  # two batches of four chunks succeed, the third fails
    with pytest.raises(EmbeddingError) as raised:
        ingest_uc(aworld, embed_batch=4)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    chunks = len(TokenWindowChunker().chunk(LONG, ChunkSpec(30, 5, 30), aworld.tokenizer))
    assert raised.value.message.startswith(
        f"Failed to ingest artifact: embedding generation failed for {chunks - 8} chunks. No data was written.")
    assert aworld.artifacts.versions == {} and aworld.vectors.count("chunk") == 0 and aworld.store.audit == []


def test_vector_failure_rolls_the_pending_version_back(aworld) -> None:
    def broken(*_):
        raise StorageError("chroma down")
    aworld.vectors.upsert = broken
    with pytest.raises(StorageError):
        ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert aworld.artifacts.versions == {}


def test_a_crash_before_commit_is_rolled_back_at_the_next_start(aworld) -> None:
    class Crash(BaseException):  # like SIGKILL: no except-Exception handler runs
        pass

    def crash_at(point: str):
        def checkpoint(reached: str) -> None:
            if reached == point:
                raise Crash(point)
        return checkpoint

    with pytest.raises(Crash):
        ingest_uc(aworld, checkpoint=crash_at("vectors_0"))(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert aworld.artifacts.pending_versions() and aworld.vectors.count("chunk") > 0
    assert hybrid(aworld)(SearchRequest("launch code zebra")).hits == []  # never visible half-written
    report = RepairStores(aworld.store, aworld.vectors, aworld.artifacts)()
    assert report.pending_artifacts_rolled_back == 1
    assert aworld.artifacts.versions == {} and aworld.vectors.count("chunk") == 0


def test_concurrent_different_content_for_one_source_is_refused(aworld) -> None:
    ingest = ingest_uc(aworld)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    aworld.artifacts.begin_artifact(first.artifact.__class__(**{**{f: getattr(first.artifact, f) for f in
                                                                   first.artifact.__dataclass_fields__},
                                                                "content_hash": "f" * 64}), [], first_entry())
    with pytest.raises(ValidationError) as raised:
        ingest(IngestRequest("doc", "drive", LONG + " more", source_id="d1"))
    assert raised.value.field == "source_id" and "concurrently" in raised.value.message


def first_entry():
    from domain.model import AuditEntry
    return AuditEntry("ingest_begin", "artifact", ("x",), "test", "2025-01-01T00:00:00Z")


@pytest.mark.parametrize("request_, field", [
    (IngestRequest("memo", "drive", "x"), "artifact_type"),
    (IngestRequest("doc", "", "x"), "source_system"),
    (IngestRequest("doc", "s" * 101, "x"), "source_system"),
    (IngestRequest("doc", "drive", "   "), "content"),
    (IngestRequest("doc", "drive", "x", source_id="i" * 501), "source_id"),
    (IngestRequest("doc", "drive", "x", title="t" * 501), "title"),
    (IngestRequest("doc", "drive", "x", author="a" * 201), "author"),
    (IngestRequest("doc", "drive", "x", participants=["p"] * 101), "participants"),
    (IngestRequest("doc", "drive", "x", participants="alice"), "participants"),
    (IngestRequest("doc", "drive", "x", ts="soon"), "ts"),
    (IngestRequest("doc", "drive", "x", sensitivity="secret"), "sensitivity"),
    (IngestRequest("doc", "drive", "x", visibility_scope="world"), "visibility_scope"),
    (IngestRequest("doc", "drive", "x", retention_policy="never"), "retention_policy"),
    (IngestRequest("doc", "drive", "x", source_url="not a url"), "source_url"),
])
def test_bad_ingest_input_names_the_field_and_changes_nothing(aworld, request_, field) -> None:
    with pytest.raises(ValidationError) as raised:
        ingest_uc(aworld)(request_)
    assert raised.value.field == field
    assert aworld.artifacts.versions == {} and aworld.embedder.calls == []


def test_ten_megabytes_is_the_limit(aworld) -> None:
    with pytest.raises(ValidationError, match="Content exceeds maximum size of 10MB"):
        ingest_uc(aworld)(IngestRequest("doc", "drive", "x" * 10_000_001))


def test_delete_cascades(aworld) -> None:
    art = ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1")).artifact
    assert DeleteArtifact(aworld.vectors, aworld.artifacts)(art.id) == art.num_chunks
    assert aworld.vectors.count("chunk") == 0
    with pytest.raises(NotFoundError, match=f"Artifact {art.id} not found"):
        GetArtifact(aworld.artifacts)(art.id)
    with pytest.raises(ValidationError, match="must start with 'art_'"):
        DeleteArtifact(aworld.vectors, aworld.artifacts)("doc_1")


def test_hybrid_search_finds_the_passage_and_fills_the_limit(aworld) -> None:
    ingest = ingest_uc(aworld)
    target = ingest(IngestRequest("doc", "drive", LONG, source_id="d1", title="Plan"))
    for i in range(6):
        ingest(IngestRequest("note", "manual", f"zebra note number {i}"))
    outcome = hybrid(aworld)(SearchRequest("launch code zebra", limit=5))
    assert len(outcome.hits) == 5
    artifact_ids = [h.fields["artifact_id"] for h in outcome.hits]
    assert len(set(artifact_ids)) == 5
    chunk_hits = [h for h in outcome.hits if h.type == "chunk"]
    assert chunk_hits and chunk_hits[0].fields["artifact_id"] == target.artifact.id
    assert "zebra" in chunk_hits[0].content
    assert all(0 < h.score <= 0.95 / 11 for h in outcome.hits)  # weights sum to 0.95, k = 10
    assert chunk_hits[0].fields["provenance"]["title"] == "Plan"


def test_neighbours_are_joined_with_boundaries(aworld) -> None:
    ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    hit = hybrid(aworld)(SearchRequest("launch code zebra", limit=1, expand_neighbors=True)).hits[0]
    assert hit.type == "chunk" and hit.content.count("[CHUNK BOUNDARY]") in (1, 2)


def test_filters_apply_inside_the_index(aworld) -> None:
    ingest = ingest_uc(aworld)
    for i in range(30):
        ingest(IngestRequest("note", "manual", f"zebra fact {i}", sensitivity="normal"))
    secret = ingest(IngestRequest("email", "gmail", "zebra secret", sensitivity="sensitive")).artifact
    hits = ArtifactSearch(searcher(aworld), aworld.artifacts)("zebra", 5, sensitivity="sensitive")
    assert [h.id for h in hits] == [secret.id]
    outcome = hybrid(aworld)(SearchRequest("zebra", 5, filters={"artifact_type": "email"}, include_memory=True))
    assert [h.id for h in outcome.hits] == [secret.id] and outcome.searched == ["artifacts", "artifact_chunks"]


@pytest.mark.parametrize("filters, field", [
    ({"colour": "red"}, "filters"), ({"artifact_type": "memo"}, "artifact_type"),
    ({"time_range_start": "2025-02-01", "time_range_end": "2025-01-01"}, "time_range_start"),
    ("email", "filters"),
])
def test_bad_filters(aworld, filters, field) -> None:
    with pytest.raises(ValidationError) as raised:
        hybrid(aworld)(SearchRequest("x", filters=filters))
    assert raised.value.field == field
