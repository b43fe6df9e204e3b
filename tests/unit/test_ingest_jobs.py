"""Artifact ingests as durable jobs on the in-memory fakes: progress, leases, take-over, failure, delete."""

from __future__ import annotations

import dataclasses

import pytest

from domain.chunking import content_hash
from domain.errors import EmbeddingError, NotFoundError, StorageError, ValidationError
from domain.ids import artifact_id
from domain.model import ChunkSpec
from domain.artifacts.input import IngestRequest
from domain.artifacts.usecases import DeleteArtifact, GetArtifact
from domain.artifacts.ingest import IngestArtifact
from domain.search.usecases import HybridSearch, SearchRequest
from plugins.chunkers.token_window import TokenWindowChunker
from tests.conftest import Crash, crash_at, catalog, searcher

LONG = " ".join(f"word{i}" for i in range(300)) + " the launch code is zebra " + " ".join(
    f"tail{i}" for i in range(100))
DOC = IngestRequest("doc", "drive", LONG, source_id="d1")
ART = artifact_id("drive", "d1", content_hash(LONG))
T0 = 1_000.0  # the clock of the worker that began the job; its lease runs 60 s




class Progress:
    """What a caller waiting on the ingest is told; ``detached`` once it stopped waiting."""

    def __init__(self, detached: bool = False) -> None:
        self.detached = detached
        self.seen: list[tuple[str, int, int]] = []

    def __call__(self, artifact_id: str, done: int, total: int) -> None:
        self.seen.append((artifact_id, done, total))


def ingest_uc(w, at: float = T0, chunkers=None, **kw):
    """An ingest worker (each its own process id) whose clock reads ``at``."""
    return IngestArtifact(w.embedder, w.artifacts, w.artifacts, chunkers or catalog(TokenWindowChunker()),
                          w.tokenizer, ChunkSpec(30, 5, 30), w.split, embed_batch=4, now=lambda: at, **kw)


def embedded(w) -> list[str]:
    return [text for call in w.embedder.calls for text in call]


def begun_elsewhere(w, request=DOC):
    """A job whose worker stopped after its first batch, its lease (until T0 + 60) still running."""
    with pytest.raises(Crash):
        ingest_uc(w, checkpoint=crash_at("vectors_0"))(request)
    job = w.artifacts.ingest_job(ART)
    assert job.status == "indexing" and 0 < job.done < job.total and job.lease_until == T0 + 60
    return job


def test_progress_counts_up_to_the_total(aworld) -> None:
    progress = Progress()
    result = ingest_uc(aworld)(DOC, progress)
    total = len(result.chunks)
    assert progress.seen[0] == (ART, 0, 0)  # named at once, before its chunks are cut
    assert {(a, t) for a, _, t in progress.seen[1:]} == {(ART, total)}
    done = [d for _, d, _ in progress.seen[1:]]
    assert done[0] == 0 and done[-1] == total and done == sorted(set(done))
    assert len(done) == 1 + -(-total // 4)  # once before the first batch, then after each batch


def test_the_same_content_while_a_job_is_under_way_answers_indexing(aworld) -> None:
    job = begun_elsewhere(aworld)
    calls = len(aworld.embedder.calls)
    result = ingest_uc(aworld, at=T0 + 30)(DOC)
    assert result.status == "indexing" and result.job == job and result.artifact.id == ART
    assert result.joined  # another call's work: this one is a duplicate of it
    assert result.artifact.content is None and len(result.chunks) == job.total
    assert len(aworld.embedder.calls) == calls and aworld.artifacts.ingest_job(ART) == job  # left to its worker


def test_the_same_content_while_another_worker_still_cuts_it_answers_indexing(aworld) -> None:
    """Killed (or busy) before its pending version was written: the job is known, its chunks are not yet."""
    class Killed(TokenWindowChunker):
        def chunk(self, *args, **kwargs):
            raise Crash("killed while cutting")

    with pytest.raises(Crash):
        ingest_uc(aworld, chunkers=catalog(Killed()))(DOC)
    job = aworld.artifacts.ingest_job(ART)
    assert job is not None and job.status == "indexing" and job.total == 0
    assert aworld.artifacts.pending_versions() == []
    result = ingest_uc(aworld, at=T0 + 30)(DOC)
    assert result.status == "indexing" and result.artifact is None and result.job == job and result.joined
    assert result.chunks == [] and result.stored_ids == [] and aworld.artifacts.ingest_job(ART) == job


def test_a_call_whose_own_job_is_taken_over_is_not_a_duplicate(aworld) -> None:
    """Its lease taken by another worker mid-run, a call answers indexing for its own work, not joined."""
    job = begun_elsewhere(aworld)

    def taken_over(point: str) -> None:
        if point == "vectors_0":  # after this call's first batch, another worker claims the job
            assert aworld.artifacts.claim_job(ART, job.version, "other:worker", T0 + 900, T0 + 800) is not None

    result = ingest_uc(aworld, at=T0 + 61, checkpoint=taken_over)(DOC)
    assert result.status == "indexing" and result.job is not None and not result.joined
    assert aworld.artifacts.ingest_job(ART).lease_owner == "other:worker"


def test_other_content_while_a_job_is_under_way_is_refused(aworld) -> None:
    job = begun_elsewhere(aworld)
    with pytest.raises(ValidationError) as raised:
        ingest_uc(aworld, at=T0 + 30)(IngestRequest("doc", "drive", LONG + " more", source_id="d1"))
    assert raised.value.field == "source_id" and "concurrently" in raised.value.message
    assert aworld.artifacts.ingest_job(ART) == job and aworld.artifacts.pending_versions() == [(ART, job.version)]


def test_a_job_whose_lease_ran_out_is_resumed_by_the_same_content(aworld) -> None:
    job = begun_elsewhere(aworld)
    first = embedded(aworld)
    result = ingest_uc(aworld, at=T0 + 61)(DOC)
    assert result.status == "ingested" and aworld.artifacts.ingest_job(ART) is None
    again = embedded(aworld)[len(first):]
    assert len(first) + len(again) == job.total and not set(first) & set(again)  # nothing embedded twice
    hits = HybridSearch(searcher(aworld), aworld.artifacts)(SearchRequest("launch code zebra")).hits
    assert hits[0].fields["artifact_id"] == ART


def test_a_job_whose_lease_ran_out_is_discarded_for_other_content(aworld) -> None:
    job = begun_elsewhere(aworld)
    result = ingest_uc(aworld, at=T0 + 61)(IngestRequest("doc", "drive", LONG.replace("zebra", "okapi"),
                                                          source_id="d1"))
    assert result.status == "ingested" and result.artifact.version != job.version
    assert aworld.artifacts.pending_versions() == [] and aworld.artifacts.ingest_job(ART) is None
    assert aworld.artifacts.embedded_records(ART, job.version) == set()
    assert {r.metadata["version"] for r in aworld.store.stored_vectors("chunk", "", 10_000)} == {
        result.artifact.version}
    content = GetArtifact(aworld.artifacts)(ART, include_content=True).content
    assert "okapi" in content and "zebra" not in content


def test_an_embedding_failure_nobody_waits_for_is_recorded_on_the_job(aworld) -> None:
    aworld.embedder.fail_after = 1
    with pytest.raises(EmbeddingError):
        ingest_uc(aworld)(DOC, Progress(detached=True))
    job = aworld.artifacts.ingest_job(ART)
    assert job.status == "failed" and "fake embedder told to fail" in job.error
    assert "embedding generation failed" in job.error
    assert aworld.artifacts.versions == {} and not any(aworld.store.stored.values())
    view = GetArtifact(aworld.artifacts)(ART)
    assert view.artifact is None and view.job == job
    aworld.embedder.fail_after = None  # a retry starts over and clears the failure
    assert ingest_uc(aworld)(DOC).status == "ingested" and aworld.artifacts.ingest_job(ART) is None


def test_an_embedding_failure_the_caller_sees_leaves_nothing(aworld) -> None:
    aworld.embedder.fail_after = 1
    with pytest.raises(EmbeddingError):
        ingest_uc(aworld)(DOC, Progress())
    assert aworld.artifacts.ingest_job(ART) is None and aworld.artifacts.versions == {}
    assert not any(aworld.store.stored.values()) and aworld.store.oldest_queued() is None


def test_deleting_an_artifact_with_only_a_job_under_way_stops_that_job(aworld, monkeypatch) -> None:
    answers: list[bool] = []
    add = aworld.artifacts.add_pending_vectors

    def recorded(*args):
        answers.append(add(*args))
        return answers[-1]
    monkeypatch.setattr(aworld.artifacts, "add_pending_vectors", recorded)
    deleted: list[int] = []

    def delete_mid_ingest(point: str) -> None:
        if point == "vectors_0":
            assert GetArtifact(aworld.artifacts)(ART).artifact is None  # only the job is known
            deleted.append(DeleteArtifact(aworld.artifacts, aworld.artifacts)(ART))
    with pytest.raises(NotFoundError, match="deleted while it was being ingested"):
        ingest_uc(aworld, checkpoint=delete_mid_ingest)(DOC)
    assert deleted == [0] and answers == [True, False]  # the next batch is refused: the job is gone
    assert aworld.artifacts.versions == {} and aworld.artifacts.ingest_job(ART) is None
    assert not any(aworld.store.stored.values())


def test_a_job_killed_while_its_chunks_are_cut_is_finished_from_the_request_it_kept(aworld) -> None:
    from domain.artifacts.resume import ResumeIngests

    class Killed(BaseException):
        pass

    class CutThenDie:  # the kill lands after the job was recorded, before the pending version commits
        def __init__(self, inner):
            self.inner, self.name, self.version = inner, "cut-then-die", "1"

        def chunk(self, *args):
            raise Killed("cutting")

    from tests.conftest import catalog
    from plugins.chunkers.token_window import TokenWindowChunker

    cutter = CutThenDie(TokenWindowChunker())
    with pytest.raises(Killed):
        ingest_uc(aworld, chunkers=catalog(cutter, TokenWindowChunker()))(dataclasses.replace(DOC, chunker=cutter.name))
    job = aworld.artifacts.ingest_job(ART)
    assert job is not None and job.total == 0 and aworld.artifacts.pending_versions() == []
    assert aworld.artifacts.job_request(ART)["content"] == DOC.content
    assert ResumeIngests(ingest_uc(aworld), aworld.artifacts, exclusive=True)() == 1
    view = GetArtifact(aworld.artifacts)(ART, include_content=True)
    assert view.artifact is not None and view.content == DOC.content and view.job is None
    assert aworld.artifacts.job_request(ART) is None


def test_a_read_that_a_commit_falls_between_still_finds_the_artifact(aworld) -> None:
    """artifact_get reads the job and the artifact in two steps; the resumed ingest commits right after
    the first of them. Whichever it was, the read shows the job or the artifact, never "not found"."""
    begun_elsewhere(aworld)
    store, resume = aworld.artifacts, ingest_uc(aworld, at=T0 + 61)

    class CommitAfterFirstRead:
        committed = False

        def __getattr__(self, name):
            answer = getattr(store, name)
            if name not in ("ingest_job", "get_artifact"):
                return answer

            def read(*args):
                got = answer(*args)
                if not self.committed:
                    self.committed = True
                    assert resume(DOC).status == "ingested"
                return got
            return read

    view = GetArtifact(CommitAfterFirstRead())(ART, include_content=True)
    assert (view.artifact or view.job) is not None
