"""Artifact use cases on the in-memory fakes: idempotency, replacement, durable ingest jobs, search."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from domain.errors import EmbeddingError, NotFoundError, StorageError, ValidationError
from domain.ids import artifact_id, version_of
from domain.model import AuditEntry, ChunkSpec, IngestJob, VectorRecord
from domain.artifacts.input import IngestRequest
from domain.artifacts.usecases import DeleteArtifact, GetArtifact, reconstruct
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.resume import ResumeIngests
from domain.search.usecases import ArtifactSearch, HybridSearch, SearchRequest
from tests.conftest import Crash, crash_at, catalog, searcher, synced, syncer
from plugins.chunkers.token_window import TokenWindowChunker

LONG = " ".join(f"word{i}" for i in range(300)) + " the launch code is zebra " + " ".join(
    f"tail{i}" for i in range(100))


def ingest_uc(w, **kw):
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, catalog(TokenWindowChunker()), w.tokenizer,
                          ChunkSpec(30, 5, 30), w.split, **kw)


def hybrid(w):
    return HybridSearch(searcher(w), w.artifacts)


def test_small_artifact_is_stored_whole(aworld) -> None:
    result = ingest_uc(aworld)(IngestRequest("note", "manual", "buy oat milk"))
    assert result.status == "ingested" and not result.artifact.is_chunked
    assert result.stored_ids == [result.artifact.id] and len(result.artifact.id) == 36
    assert aworld.vectors.count("artifact") == 0 and aworld.store.oldest_queued() is not None  # the worker's job
    assert synced(aworld).vectors.count("artifact") == 1 and aworld.vectors.count("chunk") == 0


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
    assert {version_of(v) for v in synced(aworld).vectors.all_vectors("chunk")} == {first.artifact.version}
    second = ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "giraffe"), source_id="d1"))
    assert second.status == "replaced" and second.artifact.id == first.artifact.id
    stored = {version_of(r.id) for r in aworld.store.stored_vectors("chunk", "", 10_000)}
    assert stored == {second.artifact.version}  # the store dropped the old version's vectors with it
    versions = {version_of(vid) for vid in synced(aworld).vectors.all_vectors("chunk")}
    assert versions == {second.artifact.version}  # and the sync dropped them from the index
    view = GetArtifact(aworld.artifacts)(first.artifact.id, include_content=True)
    assert "giraffe" in view.content and "zebra" not in view.content


def test_embedding_failure_part_way_writes_nothing(aworld) -> None:
    aworld.embedder.fail_after = 2  # two batches of four chunks succeed, the third fails
    with pytest.raises(EmbeddingError) as raised:
        ingest_uc(aworld, embed_batch=4)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    chunks = len(TokenWindowChunker().chunk(LONG, ChunkSpec(30, 5, 30), aworld.tokenizer))
    assert raised.value.message.startswith(
        f"Failed to ingest artifact: embedding generation failed for {chunks - 8} chunks. No data was written.")
    assert aworld.artifacts.versions == {} and aworld.artifacts.jobs == {}
    assert not any(aworld.store.stored.values())  # no vector, pending or not
    assert "ingested" not in {e.action for e in aworld.store.audit}  # at most its "ingest_begin" remains
    assert aworld.store.oldest_queued() is None and synced(aworld).vectors.count("chunk") == 0


def test_an_index_failure_does_not_fail_the_ingest_and_the_work_waits_in_the_queue(aworld, monkeypatch) -> None:
    def down(*_):
        raise StorageError("chroma down")
    monkeypatch.setattr(aworld.vectors, "upsert", down)
    result = ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert result.status == "ingested" and aworld.store.count_vectors("chunk") == len(result.chunks)
    queued = list(aworld.store.queued)
    with pytest.raises(StorageError, match="chroma down"):
        syncer(aworld).step()
    assert aworld.store.queued == queued and aworld.vectors.count("chunk") == 0
    monkeypatch.undo()  # the index is back
    assert syncer(aworld).drain() == len(queued) and aworld.store.oldest_queued() is None
    assert aworld.vectors.count("chunk") == len(result.chunks)
    hits = hybrid(aworld)(SearchRequest("launch code zebra", limit=1, mode="vector")).hits
    assert hits[0].fields["artifact_id"] == result.artifact.id




def test_a_crash_before_commit_leaves_a_job_the_next_start_finishes_without_re_embedding(aworld) -> None:
    with pytest.raises(Crash):
        ingest_uc(aworld, checkpoint=crash_at("vectors_0"), embed_batch=4)(
            IngestRequest("doc", "drive", LONG, source_id="d1"))
    [job] = aworld.artifacts.open_jobs()
    assert job.status == "indexing" and 0 < job.done < job.total
    assert aworld.artifacts.pending_versions() == [(job.artifact_id, job.version)]
    assert aworld.store.oldest_queued() is None  # nothing is queued for the index before the commit
    # Half-written, a new document is found by its words only, and says so; never by meaning.
    early = hybrid(aworld)(SearchRequest("launch code zebra")).hits
    assert early and all(h.fields["indexing"] and "semantic" not in h.fields["signals"] for h in early)
    assert hybrid(aworld)(SearchRequest("launch code zebra", mode="vector")).hits == []
    view = GetArtifact(aworld.artifacts)(job.artifact_id)
    assert view.artifact is None and view.job == job
    embedded = [text for call in aworld.embedder.calls for text in call]
    assert ResumeIngests(ingest_uc(aworld, embed_batch=4), aworld.artifacts, exclusive=True)() == 1
    again = [text for call in aworld.embedder.calls for text in call][len(embedded):]
    assert len(embedded) + len(again) == job.total and not set(embedded) & set(again)  # each chunk once
    assert aworld.artifacts.open_jobs() == [] and aworld.artifacts.pending_versions() == []
    assert GetArtifact(aworld.artifacts)(job.artifact_id, include_content=True).content == LONG
    hits = hybrid(aworld)(SearchRequest("launch code zebra")).hits
    assert hits and hits[0].fields["artifact_id"] == job.artifact_id and "indexing" not in hits[0].fields


def test_stale_vectors_in_the_index_are_never_found_and_go_when_their_artifact_is_synced(aworld) -> None:
    ingest = ingest_uc(aworld)
    ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    old = aworld.store.stored_vectors("chunk", "", 10_000)
    ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "giraffe"), source_id="d1"))
    synced(aworld).vectors.upsert("chunk", old)  # the first version's vectors, back in the index
    ghost = artifact_id("manual", "n1", "")  # and vectors of an artifact that does not exist (yet)
    aworld.vectors.upsert("artifact", [VectorRecord(f"{ghost}::abc::0", ghost, aworld.embedder.embed_query(
        "launch code zebra"), {"artifact_id": ghost})])
    hits = hybrid(aworld)(SearchRequest("launch code zebra", limit=5, mode="vector")).hits
    assert hits and ghost not in {h.fields["artifact_id"] for h in hits}
    assert all("zebra" not in h.content for h in hits)  # the ranker checks versions: only giraffe's chunks
    third = ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "okapi"), source_id="d1"))
    note = ingest(IngestRequest("note", "manual", "a short note", source_id="n1"))  # the ghost's owner, new
    assert note.artifact.id == ghost
    assert {version_of(v) for v in synced(aworld).vectors.all_vectors("chunk")} == {third.artifact.version}
    # A new owner's sync does not ask the index what it holds (it can hold nothing of the store's), so a
    # ghost stays until the owner's next change; it is never found meanwhile.
    assert {version_of(v) for v in aworld.vectors.all_vectors("artifact")} == {note.artifact.version, "abc"}
    def found() -> list[tuple[str, float]]:
        return [(h.id, h.score) for h in hybrid(aworld)(SearchRequest("launch code zebra", 5, mode="vector")).hits]

    with_ghost = found()
    aworld.vectors.delete_vectors("artifact", [f"{ghost}::abc::0"])
    assert found() == with_ghost  # the ghost's vector (the query's own) speaks for nothing
    aworld.vectors.upsert("artifact", [VectorRecord(f"{ghost}::abc::0", ghost, aworld.embedder.embed_query(
        "launch code zebra"), {"artifact_id": ghost})])
    fixed = ingest(IngestRequest("note", "manual", "a short note, fixed", source_id="n1"))
    assert {version_of(v) for v in synced(aworld).vectors.all_vectors("artifact")} == {fixed.artifact.version}


def test_concurrent_different_content_for_one_source_is_refused(aworld) -> None:
    ingest = ingest_uc(aworld)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    other = replace(first.artifact, content_hash="f" * 64)
    held = IngestJob(other.id, other.version, "indexing", 0, 1, lease_owner="another-worker",
                     lease_until=time.time() + 60)
    aworld.artifacts.begin_artifact(other, [], first_entry(), held)
    with pytest.raises(ValidationError) as raised:
        ingest(IngestRequest("doc", "drive", LONG + " more", source_id="d1"))
    assert raised.value.field == "source_id" and "concurrently" in raised.value.message
    assert aworld.artifacts.ingest_job(other.id) == held


def first_entry():
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
    assert synced(aworld).vectors.count("chunk") == art.num_chunks
    assert DeleteArtifact(aworld.artifacts, aworld.artifacts)(art.id) == art.num_chunks
    assert aworld.store.count_vectors("chunk") == 0 and aworld.store.oldest_queued() is not None
    assert synced(aworld).vectors.count("chunk") == 0
    with pytest.raises(NotFoundError, match=f"Artifact {art.id} not found"):
        GetArtifact(aworld.artifacts)(art.id)
    with pytest.raises(ValidationError, match="must start with 'art_'"):
        DeleteArtifact(aworld.artifacts, aworld.artifacts)("doc_1")


def test_hybrid_search_finds_the_passage_and_fills_the_limit(aworld) -> None:
    ingest = ingest_uc(aworld)
    target = ingest(IngestRequest("doc", "drive", LONG, source_id="d1", title="Plan"))
    for i in range(6):
        ingest(IngestRequest("note", "manual", f"zebra note number {i}"))
    outcome = hybrid(aworld)(SearchRequest("launch code zebra", limit=5, per_artifact=1))
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


def test_neighbours_are_joined_without_repeating_their_overlap(aworld) -> None:
    art = ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1")).artifact
    chunks = aworld.artifacts.chunks_of(art.id)
    assert all(b.start_char < a.end_char for a, b in zip(chunks, chunks[1:])), "test setup: windows overlap"
    search = ArtifactSearch(searcher(synced(aworld)), aworld.artifacts)
    for chunk in (chunks[0], chunks[len(chunks) // 2], chunks[-1]):
        query = " ".join(chunk.content.split()[3:6])  # words found in this chunk (and its neighbours)
        hit = next(h for h in search(query, 50, expand_neighbors=True) if h.id == chunk.id)
        window = [c for c in chunks if abs(c.index - chunk.index) <= 1]
        parts = hit.content.split("\n[CHUNK BOUNDARY]\n")
        middle = parts[1] if chunk.index > 0 else parts[0]
        assert middle == chunk.content, "the text between the markers is exactly the hit chunk"
        assert len(parts) == len(window), parts
        assert "".join(parts) == LONG[window[0].start_char:window[-1].end_char], "nothing repeated, nothing lost"
        assert hit.fields["neighbors"] == [c.id for c in window if c.index != chunk.index]


def test_search_hits_carry_a_snippet_around_the_match(aworld) -> None:
    ingest_uc(aworld)(IngestRequest("doc", "drive", LONG, source_id="d1"))
    hit = hybrid(synced(aworld))(SearchRequest("launch code zebra", limit=1)).hits[0]
    shown = hit.fields["snippet"]
    assert "the launch code is zebra" in shown and shown.startswith("…")
    assert shown.strip("…") in hit.content and len(shown.strip("…")) <= 240


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


def test_an_ingest_under_way_is_deleted_only_by_whom_it_is(aworld) -> None:
    """A first ingest stopped before its commit (a job, no version yet): another caller who may not see
    it gets "not found", a teammate it is shared with is refused, its writer may cancel it."""
    from domain.access.principal import Principal, RequestContext

    alice = RequestContext(Principal("alice", teams=("eng",)))
    bob = RequestContext(Principal("bob", teams=("eng",)))
    carol = RequestContext(Principal("carol", teams=("ops",)))
    with pytest.raises(Crash):
        ingest_uc(aworld, checkpoint=crash_at("vectors_0"), embed_batch=4, identity=lambda: alice)(
            IngestRequest("doc", "drive", LONG, source_id="d1", visibility_scope="team"))
    [job] = aworld.artifacts.open_jobs()
    with pytest.raises(NotFoundError):
        DeleteArtifact(aworld.artifacts, aworld.artifacts, identity=lambda: carol)(job.artifact_id)
    with pytest.raises(ValidationError) as refused:
        DeleteArtifact(aworld.artifacts, aworld.artifacts, identity=lambda: bob)(job.artifact_id)
    assert refused.value.field == "artifact_id" and "alice's" in refused.value.message
    assert aworld.artifacts.open_jobs() == [job]
    DeleteArtifact(aworld.artifacts, aworld.artifacts, identity=lambda: alice)(job.artifact_id)
    assert aworld.artifacts.open_jobs() == []


def test_a_new_version_embeds_only_the_chunks_whose_text_changed(aworld) -> None:
    ingest = ingest_uc(aworld, copies=aworld.store)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    before = len([t for call in aworld.embedder.calls for t in call])
    second = ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "giraffe"), source_id="d1"))
    asked = [t for call in aworld.embedder.calls for t in call][before:]
    changed = {c.content for c in second.chunks} - {c.content for c in first.chunks}
    assert second.status == "replaced" and 0 < len(changed) < len(second.chunks)
    assert asked and all(any(piece in text or text in piece for text in changed) for piece in asked)
    assert len(asked) < len(second.chunks)
    # every chunk of the new version has its vectors, each equal to the model's for its text
    stored = aworld.store.stored_vectors("chunk", "", 10_000)
    assert {version_of(r.id) for r in stored} == {second.artifact.version}
    assert {r.record_id for r in stored} == {c.id for c in second.chunks}
    for record in stored:
        text = next(p.content for c in second.chunks if c.id == record.record_id
                    for p in aworld.split(c.content) if p.index == int(record.id.rsplit("::", 1)[1]))
        assert record.vector == aworld.embedder.embed_documents([text])[0]


def test_without_the_store_copy_or_with_another_model_every_chunk_is_embedded_again(aworld) -> None:
    ingest = ingest_uc(aworld)  # no copies: as before
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    before = len([t for call in aworld.embedder.calls for t in call])
    ingest(IngestRequest("doc", "drive", LONG.replace("zebra", "giraffe"), source_id="d1"))
    assert len([t for call in aworld.embedder.calls for t in call]) - before >= len(first.chunks)


def test_a_chunk_another_document_of_the_same_owner_embedded_is_not_embedded_again(aworld) -> None:
    """Identical text across documents shares its vector (same model, same owner); another owner's
    identical text is embedded again, so no caller learns from a faster ingest what another stored."""
    from domain.access.principal import Principal, RequestContext

    ingest = ingest_uc(aworld, copies=aworld.store)
    first = ingest(IngestRequest("doc", "drive", LONG, source_id="d1"))
    before = len([t for call in aworld.embedder.calls for t in call])
    copy = ingest(IngestRequest("doc", "drive", LONG, source_id="d2"))  # the same text under another name
    assert copy.status == "ingested" and copy.artifact.id != first.artifact.id
    assert len([t for call in aworld.embedder.calls for t in call]) == before, "shared text was embedded again"
    stored = {r.record_id: r for r in aworld.store.stored_vectors("chunk", "", 10_000)}
    for a, b in zip(first.chunks, copy.chunks, strict=True):
        assert a.content == b.content and stored[b.id].vector == stored[a.id].vector
        assert stored[b.id].text_key == stored[a.id].text_key is not None
    # one new paragraph: only its chunks reach the model
    grown = LONG.replace("the launch code is zebra", "the launch code is zebra and the vault is under the oak")
    third = ingest(IngestRequest("doc", "drive", grown, source_id="d3"))
    asked = [t for call in aworld.embedder.calls for t in call][before:]
    new = {c.content for c in third.chunks} - {c.content for c in first.chunks}
    assert asked and len(asked) < len(third.chunks) and all(any(t in c or c in t for c in new) for t in asked)
    # another owner's identical document is embedded whole
    bob = RequestContext(Principal("bob"))
    other = ingest_uc(aworld, copies=aworld.store, identity=lambda: bob)(
        IngestRequest("doc", "drive", LONG, source_id="d1"))
    assert other.artifact.owner == "bob"
    assert len([t for call in aworld.embedder.calls for t in call]) - before - len(asked) >= len(other.chunks)
