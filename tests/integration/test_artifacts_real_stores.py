"""Artifacts through the real container (embedded Chroma + SQLite): rows and vectors agree exactly.

After every ingest, replace and delete, the vectors in Chroma are exactly those of the committed
rows in SQLite: one or more per chunk of a chunked artifact (chunk collection), one or more per
artifact stored whole (artifact collection), each tagged with the committed version, and nothing
else. The embedder is the deterministic ``HashEmbedder`` for speed.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.memory.basics import HashEmbedder
from config.settings import Settings
from domain.chunking import content_hash
from domain.errors import EmbeddingError, NotFoundError
from domain.model import VectorRecord
from domain.artifacts.input import IngestRequest
from domain.search.usecases import SearchRequest
from entrypoints.runtime import Runtime

WHOLE, CHUNKS = "artifact", "chunk"
WORDS = ("harbour lighthouse keeper lantern gallery railing scaffold paint budget invoice contract pallet route "
         "ferry storm generator warehouse schedule meeting review deadline vendor freight customs").split()


def runtime(data_dir: Path, embedder: HashEmbedder | None = None) -> Runtime:
    """The real container on ``data_dir``; max_tokens 256 keeps the local profile's 200/32 chunk sizes."""
    rt = Runtime(Settings(memtrove_data_dir=data_dir, memtrove_warmup=False))
    rt.app.adapters.embedder.override(providers.Object(embedder or HashEmbedder(dimensions=32, max_tokens=256)))
    rt.start()
    rt.ensure_ready()
    return rt


def prose(seed: int, sentences: int) -> str:
    rng = random.Random(seed)
    out = []
    for n in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        out.append(f"{words[0].capitalize()} {' '.join(words[1:])} number {seed}-{n}.")
    return " ".join(out)


def ingest(rt: Runtime, content: str, source_id: str | None = "doc-1", **fields: object):
    request = IngestRequest(artifact_type=fields.pop("artifact_type", "doc"),
                            source_system=fields.pop("source_system", "drive"),
                            content=content, source_id=source_id, **fields)  # type: ignore[arg-type]
    return rt.app.use_cases.ingest_artifact()(request)


def vectors_by_owner(rt: Runtime, collection: str) -> dict[str, set[str]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for vid, owner in rt.app.adapters.vectors().all_vectors(collection).items():
        owners[owner].add(vid)
    return dict(owners)


def assert_stores_agree(rt: Runtime) -> dict[str, str]:
    """Rows and vectors describe exactly the same committed versions; returns artifact id -> version.

    The vector index follows the store: first everything committed is brought into it (what the
    worker does in the background, and every search before it reads).
    """
    rt.app.use_cases.sync_vectors().catch_up()
    store = rt.app.adapters.store()
    assert store.oldest_queued() is None and store.open_jobs() == []
    for collection in (WHOLE, CHUNKS):  # the index holds exactly what the store holds
        stored = {r.id for r in store.stored_vectors(collection, "", 10**9)}
        assert stored == set(rt.app.adapters.vectors().all_vectors(collection)), collection
    assert store.pending_versions() == [], "a pending version outlived its ingest"
    committed = store.committed_versions()
    expected_whole: set[str] = set()
    expected_chunks: dict[str, str] = {}  # chunk id -> version
    artifacts = store.get_artifacts(sorted(committed))
    assert set(artifacts) == set(committed)
    for art_id, version in committed.items():
        artifact = artifacts[art_id]
        assert artifact.version == version
        chunks = store.chunks_of(art_id)
        assert len(chunks) == artifact.num_chunks and artifact.is_chunked == bool(chunks), art_id
        if chunks:
            assert artifact.content is None
            expected_chunks.update({c.id: version for c in chunks})
        else:
            expected_whole.add(art_id)
    whole, chunked = vectors_by_owner(rt, WHOLE), vectors_by_owner(rt, CHUNKS)
    assert set(whole) == expected_whole, (sorted(whole), sorted(expected_whole))
    assert set(chunked) == set(expected_chunks), (sorted(chunked), sorted(expected_chunks))
    for owner, vids in whole.items():
        assert all(vid.startswith(f"{owner}::{committed[owner]}::") for vid in vids), (owner, vids)
    for owner, vids in chunked.items():
        assert all(vid.startswith(f"{owner}::{expected_chunks[owner]}::") for vid in vids), (owner, vids)
    return committed


@pytest.fixture
def rt(tmp_path: Path):
    running = runtime(tmp_path / "data")
    yield running
    running.shutdown()


def test_whole_and_chunked_ingests_write_matching_rows_and_vectors(rt: Runtime) -> None:
    small = ingest(rt, "A short note about the lighthouse lantern.", source_id="small", artifact_type="note")
    large_text = prose(1, 120)
    large = ingest(rt, large_text, source_id="large", sensitivity="sensitive", visibility_scope="team",
                   ts="2024-05-01T10:00:00+02:00")
    assert small.status == large.status == "ingested"
    assert not small.artifact.is_chunked and small.stored_ids == [small.artifact.id]
    assert large.artifact.is_chunked and large.artifact.num_chunks == len(large.chunks) >= 5
    committed = assert_stores_agree(rt)
    assert committed == {small.artifact.id: content_hash("A short note about the lighthouse lantern.")[:12],
                         large.artifact.id: content_hash(large_text)[:12]}
    store = rt.app.adapters.store()
    assert [c.id for c in store.chunks_of(large.artifact.id)] == large.stored_ids[1:]
    for chunk in store.chunks_of(large.artifact.id):
        assert large_text[chunk.start_char:chunk.end_char] == chunk.content
        assert chunk.id.endswith(content_hash(chunk.content)[:8])
    # chunk vectors carry the artifact's filterable fields (privacy inherited from the artifact)
    vectors = rt.app.adapters.vectors()
    probe = rt.app.adapters.embedder().embed_query("lighthouse")
    everything = vectors.query(CHUNKS, probe, 1_000, {"artifact_id": large.artifact.id})
    inherited = vectors.query(CHUNKS, probe, 1_000, {"artifact_id": large.artifact.id, "sensitivity": "sensitive",
                                                      "visibility_scope": "team", "artifact_type": "doc",
                                                      "source_system": "drive"})
    assert len(everything) == len(inherited) == vectors.count(CHUNKS)
    stored = store.get_artifact(large.artifact.id)
    assert stored is not None and stored.ts == "2024-05-01T08:00:00Z"


def test_unchanged_reingest_embeds_and_writes_nothing(tmp_path: Path) -> None:
    embedder = HashEmbedder(dimensions=32, max_tokens=256)
    rt = runtime(tmp_path / "data", embedder)
    try:
        text = prose(2, 80)
        first = ingest(rt, text)
        calls, audit = len(embedder.calls), rt.app.adapters.store().recent(100)
        vectors = rt.app.adapters.vectors().all_vectors(CHUNKS)
        again = ingest(rt, text)
        assert again.status == "unchanged" and again.stored_ids == first.stored_ids
        assert len(embedder.calls) == calls, "an unchanged re-ingest embedded again"
        assert rt.app.adapters.store().recent(100) == audit, "an unchanged re-ingest wrote an audit entry"
        assert rt.app.adapters.vectors().all_vectors(CHUNKS) == vectors
        no_source = ingest(rt, "Loose note without a source id.", source_id=None, source_system="manual")
        calls = len(embedder.calls)
        twice = ingest(rt, "Loose note without a source id.", source_id=None, source_system="manual")
        assert twice.status == "unchanged" and twice.artifact.id == no_source.artifact.id
        assert no_source.artifact.id == "art_" + content_hash("Loose note without a source id.")[:32]
        assert len(embedder.calls) == calls
        assert_stores_agree(rt)
    finally:
        rt.shutdown()


@pytest.mark.parametrize("shapes", [("chunked", "chunked"), ("chunked", "whole"), ("whole", "chunked"),
                                    ("whole", "whole")])
def test_a_replace_leaves_no_vector_or_row_of_the_old_version(rt: Runtime, shapes: tuple[str, str]) -> None:
    texts = {"chunked": (prose(3, 90), prose(4, 110)), "whole": ("Old short version.", "New short version.")}
    old_text, new_text = texts[shapes[0]][0], texts[shapes[1]][1]
    other = ingest(rt, prose(5, 60), source_id="bystander")
    old = ingest(rt, old_text)
    before = assert_stores_agree(rt)
    new = ingest(rt, new_text)
    assert new.status == "replaced" and new.artifact.id == old.artifact.id
    after = assert_stores_agree(rt)
    assert after == {**before, old.artifact.id: content_hash(new_text)[:12]}
    old_version = content_hash(old_text)[:12]
    for collection in (WHOLE, CHUNKS):
        leftovers = [vid for vid in rt.app.adapters.vectors().all_vectors(collection) if f"::{old_version}::" in vid]
        assert leftovers == [], f"vectors of the replaced version remain in {collection}: {leftovers[:3]}"
    store = rt.app.adapters.store()
    gone = set(old.stored_ids[1:]) - set(new.stored_ids[1:])
    assert not set(store.get_chunks(sorted(gone))), "chunks of the replaced version are still readable"
    view = rt.app.use_cases.get_artifact()(old.artifact.id, include_content=True, include_chunks=True)
    assert view.content == new_text and [c.id for c in view.chunks or []] == new.stored_ids[1:]
    bystander = store.get_artifact(other.artifact.id)
    assert bystander is not None and bystander.version == other.artifact.version, "a replace touched another artifact"
    assert [c.id for c in store.chunks_of(other.artifact.id)] == other.stored_ids[1:]
    actions = [e.action for e in store.recent(20)]
    assert "replaced" in actions


def test_a_failed_embedding_writes_nothing_and_keeps_the_old_version(tmp_path: Path) -> None:
    embedder = HashEmbedder(dimensions=32, max_tokens=256)
    rt = runtime(tmp_path / "data", embedder)
    try:
        kept = ingest(rt, prose(6, 90))
        before = assert_stores_agree(rt)
        vectors_before = {c: rt.app.adapters.vectors().all_vectors(c) for c in (WHOLE, CHUNKS)}
        embedder.fail_after = len(embedder.calls)  # the next embedder call fails
        with pytest.raises(EmbeddingError, match=r"embedding generation failed for \d+ chunks\. No data was written"):
            ingest(rt, prose(7, 90))  # a replace of ``kept``
        with pytest.raises(EmbeddingError, match="No data was written"):
            ingest(rt, prose(8, 90), source_id="brand-new")
        # a long document embeds in several calls: the first succeeds, the second fails
        embedder.fail_after = len(embedder.calls) + 1
        with pytest.raises(EmbeddingError, match="No data was written") as failed:
            ingest(rt, prose(15, 1_600), source_id="long")
        assert len(embedder.calls) == embedder.fail_after, "the test needs a document embedded in several calls"
        assert "failed for" in failed.value.message
        embedder.fail_after = None
        assert assert_stores_agree(rt) == before
        assert {c: rt.app.adapters.vectors().all_vectors(c) for c in (WHOLE, CHUNKS)} == vectors_before
        view = rt.app.use_cases.get_artifact()(kept.artifact.id, include_content=True)
        assert view.content == prose(6, 90)
    finally:
        rt.shutdown()


def test_delete_removes_rows_and_every_vector(rt: Runtime) -> None:
    chunked = ingest(rt, prose(9, 90), source_id="a")
    whole = ingest(rt, "Tiny whole artifact.", source_id="b")
    kept = ingest(rt, prose(10, 70), source_id="c")
    assert rt.app.use_cases.delete_artifact()(chunked.artifact.id) == chunked.artifact.num_chunks
    assert rt.app.use_cases.delete_artifact()(whole.artifact.id) == 0
    committed = assert_stores_agree(rt)
    assert committed == {kept.artifact.id: kept.artifact.version}
    store = rt.app.adapters.store()
    assert store.chunks_of(chunked.artifact.id) == [] and store.get_chunks(chunked.stored_ids[1:]) == {}
    with pytest.raises(NotFoundError, match=f"Artifact {chunked.artifact.id} not found"):
        rt.app.use_cases.get_artifact()(chunked.artifact.id)
    with pytest.raises(NotFoundError):
        rt.app.use_cases.delete_artifact()(chunked.artifact.id)
    hits = rt.app.use_cases.hybrid_search()(SearchRequest("harbour lighthouse keeper", limit=50))
    assert {h.fields["artifact_id"] for h in hits.hits} == {kept.artifact.id}
    assert [e.action for e in store.recent(2)] == ["delete", "delete"]


def test_rows_and_vectors_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = runtime(data)
    texts = {"a": prose(11, 100), "b": "A whole note that must survive the restart. ✅ 日本語\r\n", "c": prose(12, 40)}
    results = {key: ingest(first, text, source_id=key, title=f"title {key}", participants=["ann", "bo"])
               for key, text in texts.items()}
    ingest(first, prose(13, 100), source_id="a")  # replaced before the restart
    first.app.use_cases.delete_artifact()(results["c"].artifact.id)
    committed = assert_stores_agree(first)
    chunks_before = first.app.adapters.store().chunks_of(results["a"].artifact.id)
    vectors_before = {c: first.app.adapters.vectors().all_vectors(c) for c in (WHOLE, CHUNKS)}
    first.shutdown()

    second = runtime(data)
    try:
        assert assert_stores_agree(second) == committed
        assert {c: second.app.adapters.vectors().all_vectors(c) for c in (WHOLE, CHUNKS)} == vectors_before
        store = second.app.adapters.store()
        assert store.chunks_of(results["a"].artifact.id) == chunks_before
        view = second.app.use_cases.get_artifact()(results["b"].artifact.id, include_content=True)
        assert view.content == texts["b"] and view.artifact.participants == ("ann", "bo")
        assert second.app.use_cases.get_artifact()(results["a"].artifact.id, include_content=True).content == \
            prose(13, 100)
        with pytest.raises(NotFoundError):
            second.app.use_cases.get_artifact()(results["c"].artifact.id)
        again = ingest(second, texts["b"], source_id="b", title="title b", participants=["ann", "bo"])
        assert again.status == "unchanged"
    finally:
        second.shutdown()


def test_foreign_vectors_are_never_returned_and_a_rebuild_from_the_store_drops_them(tmp_path: Path) -> None:
    """No start-up sweep any more: the index is derived, so strays are ignored by reads and gone after a rebuild."""
    data = tmp_path / "data"
    first = runtime(data)
    kept = ingest(first, prose(14, 90))
    committed = assert_stores_agree(first)
    vectors = first.app.adapters.vectors()
    ghost = [0.1] * 32
    meta = {"artifact_id": kept.artifact.id, "artifact_type": "doc", "source_system": "drive",
            "sensitivity": "normal", "visibility_scope": "me", "ts_epoch": 0.0, "chunk_index": 0, "piece": 0}
    # an old version's vector a crash left behind, and one of an artifact that has no row at all
    vectors.upsert(CHUNKS, [VectorRecord(f"{kept.stored_ids[1]}::0123456789ab::0", kept.stored_ids[1], ghost,
                                         {**meta, "version": "0123456789ab"})])
    vectors.upsert(WHOLE, [VectorRecord("art_" + "f" * 32 + "::0123456789ab::0", "art_" + "f" * 32, ghost,
                                        {**meta, "artifact_id": "art_" + "f" * 32, "version": "0123456789ab"})])
    first.shutdown()

    second = runtime(data)
    try:
        hits = second.app.use_cases.hybrid_search()(SearchRequest(prose(14, 1), limit=10, mode="vector")).hits
        assert all("0123456789ab" not in h.id and not h.id.startswith("art_" + "f" * 32) for h in hits)
        assert {h.fields["artifact_id"] for h in hits} == {kept.artifact.id}
        counts = second.app.use_cases.rebuild_vectors()()
        assert counts[CHUNKS] == kept.artifact.num_chunks and counts[WHOLE] == 0
        assert assert_stores_agree(second) == committed
    finally:
        second.shutdown()


@pytest.mark.parametrize("kind, text", [
    ("emoji", "Status update: " + " ".join(["🚀🔥✅"] * 150)),
    ("cjk", "供应链审查报告。" * 120),
    ("mixed", " ".join(f"Kapitel {n}: Überprüfung 📦 供应链 {n}" for n in range(60))),
])
def test_chunks_hold_at_most_the_target_tokens(rt: Runtime, kind: str, text: str) -> None:
    """CHUNK_TARGET_TOKENS (200 for the local profile) bounds every chunk in cl100k tokens, whatever the script."""
    tokenizer = rt.app.adapters.tokenizer()
    spec = rt.app.use_cases.chunk_spec()
    assert tokenizer.count(text) > spec.single_piece_max_tokens, "test setup: the text must be chunked"
    result = ingest(rt, text, source_id=kind)
    assert result.artifact.is_chunked
    # a chunk re-tokenized alone may differ by a token or two from its slice of the whole text's tokens
    counts = [(c.index, c.token_count, tokenizer.count(c.content)) for c in result.chunks]
    too_big = [(index, reported, actual) for index, reported, actual in counts
               if max(reported, actual) > spec.target_tokens + 2]
    assert not too_big, (f"chunks above the {spec.target_tokens}-token target "
                         f"(index, reported token_count, cl100k count of the chunk): {too_big}")
    assert all(abs(reported - actual) <= 2 for _, reported, actual in counts), counts
    assert rt.app.use_cases.get_artifact()(result.artifact.id, include_content=True).content == text
