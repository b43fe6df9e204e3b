"""The behaviour every ArtifactStore shares; subclass ArtifactStoreContract as ``Test...`` to run it."""

from __future__ import annotations

import pytest

from domain.errors import StorageError
from domain.model import Artifact, ArtifactChunk, AuditEntry, EmbeddingProfile, IngestJob
from domain.ports import ArtifactStore

PROFILE = EmbeddingProfile("fake", "hash", 64, 64)


def artifact(aid: str, digest: str, chunks: int) -> Artifact:
    return Artifact(
        id=aid, artifact_type="doc", source_system="drive", source_id="s1", source_url="https://x/y",
        title="T", author="A", participants=("a", "b"), ts="2025-01-02T03:04:05Z", content_hash=digest,
        token_count=10, is_chunked=chunks > 0, num_chunks=chunks, sensitivity="normal", visibility_scope="me",
        retention_policy="forever", ingested_at="2025-01-02T03:04:05Z", chunker="token-window",
        chunker_version="1", profile=PROFILE, content=None if chunks else "whole text")


def parts(aid: str, n: int, tag: str) -> list[ArtifactChunk]:
    return [ArtifactChunk(f"{aid}::chunk::{i:03d}::{tag}{i:07d}", aid, i, i * 10, i * 10 + 12, f"{tag} chunk {i}",
                          3, tag * 64) for i in range(n)]


def entry(action: str) -> AuditEntry:
    return AuditEntry(action, "artifact", ("a",), "test", "2025-01-01T00:00:00Z")


def job(a: Artifact, worker: str = "w1", lease_until: float = 1e12) -> IngestJob:
    return IngestJob(a.id, a.version, "indexing", 0, max(a.num_chunks, 1), lease_owner=worker, lease_until=lease_until)


class ArtifactStoreContract:
    """Subclasses override ``store`` with a fresh, empty ArtifactStore."""

    @pytest.fixture
    def store(self) -> ArtifactStore:
        raise NotImplementedError

    def test_pending_is_invisible_until_committed(self, store: ArtifactStore) -> None:
        v1 = artifact("art_a", "1" * 64, 3)
        store.begin_artifact(v1, parts("art_a", 3, "a"), entry("begin"), job(v1))
        assert store.get_artifact("art_a") is None and store.chunks_of("art_a") == []
        assert store.pending_version("art_a") == v1.version and store.pending_versions() == [("art_a", v1.version)]
        assert store.commit_artifact("art_a", v1.version, entry("ingested")) is None
        assert store.get_artifact("art_a") == v1
        assert [c.index for c in store.chunks_of("art_a")] == [0, 1, 2]
        assert store.committed_versions() == {"art_a": v1.version} and store.pending_versions() == []

    def test_commit_replaces_the_old_version_atomically(self, store: ArtifactStore) -> None:
        v1, v2 = artifact("art_a", "1" * 64, 3), artifact("art_a", "2" * 64, 2)
        store.begin_artifact(v1, parts("art_a", 3, "a"), entry("begin"), job(v1))
        store.commit_artifact("art_a", v1.version, entry("ingested"))
        store.begin_artifact(v2, parts("art_a", 2, "b"), entry("begin"), job(v2))
        assert store.get_artifact("art_a") == v1  # the old version serves reads until the commit
        assert store.commit_artifact("art_a", v2.version, entry("replaced")) == v1.version
        assert store.get_artifact("art_a") == v2
        assert [c.content for c in store.chunks_of("art_a")] == ["b chunk 0", "b chunk 1"]

    def test_discard_and_missing_commit(self, store: ArtifactStore) -> None:
        v1 = artifact("art_a", "1" * 64, 1)
        store.begin_artifact(v1, parts("art_a", 1, "a"), entry("begin"), job(v1))
        store.discard_pending("art_a", v1.version)
        assert store.pending_versions() == []
        with pytest.raises(StorageError):
            store.commit_artifact("art_a", v1.version, entry("ingested"))

    def test_chunk_lookups_see_only_committed_versions(self, store: ArtifactStore) -> None:
        v1 = artifact("art_a", "1" * 64, 4)
        chunks = parts("art_a", 4, "a")
        store.begin_artifact(v1, chunks, entry("begin"), job(v1))
        assert store.get_chunks([chunks[0].id]) == {}
        store.commit_artifact("art_a", v1.version, entry("ingested"))
        assert store.get_chunks([chunks[0].id, "nope"]) == {chunks[0].id: chunks[0]}
        assert [c.index for c in store.chunk_window("art_a", 1, 2)] == [1, 2]
        assert store.get_artifacts(["art_a", "art_b"]).keys() == {"art_a"}

    def test_a_version_written_words_first_is_read_only_by_reads_that_ask_for_it(self, store: ArtifactStore) -> None:
        v1 = artifact("art_a", "1" * 64, 2)
        chunks = parts("art_a", 2, "a")
        store.begin_artifact(v1, chunks, entry("begin"), job(v1), words_first=True)
        assert store.get_artifact("art_a") is None and store.get_artifacts(["art_a"]) == {}
        assert store.get_chunks([chunks[0].id]) == {} and store.chunks_of("art_a") == []
        shown = store.get_artifacts(["art_a", "art_b"], indexing=True)
        assert shown.keys() == {"art_a"} and shown["art_a"].indexing and shown["art_a"].version == v1.version
        assert store.get_chunks([chunks[1].id, "nope"], indexing=True) == {chunks[1].id: chunks[1]}
        assert store.chunk_window("art_a", 0, 1) == [] and store.chunk_window("art_a", 0, 1, indexing=True) == chunks
        pending = store.pending_artifact("art_a", v1.version)
        assert pending is not None and pending[0].indexing
        store.commit_artifact("art_a", v1.version, entry("ingested"))
        assert store.get_artifact("art_a") == v1 and not store.get_artifacts(["art_a"], indexing=True)["art_a"].indexing
        # A pending replacement (not words first) is never what a read gets; the committed one is.
        v2 = artifact("art_a", "2" * 64, 1)
        store.begin_artifact(v2, parts("art_a", 1, "b"), entry("begin"), job(v2))
        assert store.get_artifacts(["art_a"], indexing=True) == {"art_a": v1}
        assert store.get_chunks([parts("art_a", 1, "b")[0].id], indexing=True) == {}
        # A failed job withdraws a version shown early.
        v3 = artifact("art_c", "3" * 64, 1)
        store.begin_artifact(v3, parts("art_c", 1, "c"), entry("begin"), job(v3), words_first=True)
        store.fail_job("art_c", v3.version, "embedding failed")
        assert store.get_artifacts(["art_c"], indexing=True) == {}
        assert store.get_chunks([parts("art_c", 1, "c")[0].id], indexing=True) == {}

    def test_delete_every_version(self, store: ArtifactStore) -> None:
        v1 = artifact("art_a", "1" * 64, 3)
        store.begin_artifact(v1, parts("art_a", 3, "a"), entry("begin"), job(v1))
        store.commit_artifact("art_a", v1.version, entry("ingested"))
        assert store.delete_artifact("art_a", entry("delete")) == 3
        assert store.get_artifact("art_a") is None and store.delete_artifact("art_a", entry("delete")) is None
        assert store.chunks_of("art_a") == []

    def test_whole_artifacts_keep_their_content(self, store: ArtifactStore) -> None:
        whole = artifact("art_w", "3" * 64, 0)
        store.begin_artifact(whole, [], entry("begin"), job(whole))
        store.commit_artifact("art_w", whole.version, entry("ingested"))
        got = store.get_artifact("art_w")
        assert got is not None and got.content == "whole text" and got.participants == ("a", "b")
