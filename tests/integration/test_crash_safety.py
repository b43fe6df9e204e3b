"""Crash safety of artifact ingestion, proved on real processes.

A real ``memtrove serve`` (stdio, OpenAI-compatible embedder against a local fake) ingests an
artifact of ~1,120 chunks and is SIGKILLed (MEMTROVE_CRASH_AT) at every checkpoint of the write
path: embedded, pending_written, vectors_0 ... vectors_17 (one per 64 vectors), committed,
old_vectors_deleted (22 points) for a first ingest, and at 7 of them for a replacement of a
complete older version; each in a fresh data directory. Per kill:

1. the ingest call fails because the process died, with exit status -9;
2. a copy of the data directory shows the process died exactly at that point (pending or committed
   rows, and exactly the first (k+1)*64 vectors of the new version at ``vectors_k``);
3. a new server (no fault) never shows a partial artifact through artifact_get (even before its
   start-up repair ran), hybrid_search or artifact_search; its repaired stores, copied while it is
   frozen (SIGSTOP: exactly what a kill at that instant would leave), hold no pending row, no
   orphan vector, no orphan row, rows and vectors agree exactly, and the artifact is either absent /
   the old complete version (killed before the commit) or the new complete one (at or after it);
4. re-ingesting in that server converges to exactly the stores of an uninterrupted ingest (read
   directly after a clean stop), and once more answers "unchanged".

test_search_reaches_every_vector_after_recovery then requires every stored vector of every
scenario (after the repair, and after re-ingesting) to be found by a query with its own embedding:
rows and vectors can agree while the index cannot reach some of them (Chroma 1.5.9, see there).
Also here: an embedding failure part-way writes nothing, and reads made in-process at every
checkpoint of a live replacement see exactly one complete version.

The scenarios are independent processes; two run at a time on a pool (this is a 2-core box), each
test waits for its own scenario and reports its own failure.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.usecases.artifacts import VECTOR_BATCH
from tests.support.crash_driver import (
    QuickFakeOpenAIServer, RawStdioServer, ServerDied, StoreSnapshot, chroma_exclusive, document, snapshot,
    unreachable_vectors,
)
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.slow

WORKERS = 2
DIMS = 32

# Deterministic, non-repetitive documents. V2 replaces V1 under the same source id: it keeps V1's
# first half (~570 identical chunks, so identical chunk ids in both versions) and then differs.
V1 = document(7, 1140)
V2 = V1[:V1.index("\n\n", len(V1) // 2)] + "\n\n" + document(8, 570)
# What these documents cut into with CHUNK_TARGET_TOKENS=40 / CHUNK_OVERLAP_TOKENS=8, checked
# against what the server really stored (test_reference_ingests); a change here needs new sizes.
BATCHES_V1 = 18  # 1,121 chunks (~36k tokens): 22 kill points for a first ingest
BATCHES_V2 = 18  # 1,121 chunks, ~570 of them shared with V1

COMMITTED_POINTS = ("committed", "old_vectors_deleted")
POINTS_FIRST = ["embedded", "pending_written", *(f"vectors_{k}" for k in range(BATCHES_V1)), *COMMITTED_POINTS]
POINTS_REPLACE = ["embedded", "pending_written", "vectors_0", f"vectors_{BATCHES_V2 // 2}",
                  f"vectors_{BATCHES_V2 - 1}", *COMMITTED_POINTS]
KINDS = {"test_first_ingest_killed_at": "first", "test_replacement_killed_at": "replace"}

SOURCE = {"artifact_type": "doc", "source_system": "crash-test", "source_id": "doc-A", "title": "Crash test doc"}


def base_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS), "CHUNK_TARGET_TOKENS": "40",
            "CHUNK_OVERLAP_TOKENS": "8", "SINGLE_PIECE_MAX_TOKENS": "40", **extra}


def ingest_args(text: str) -> dict[str, Any]:
    return {**SOURCE, "content": text}


# ------------------------------------------------------------------------------ reference states

@dataclass(frozen=True)
class Reference:
    """The stores after an uninterrupted ingest of ``text``: what every interrupted one must end as."""

    text: str
    art_id: str
    version: str
    content_hash: str
    data_dir: Path
    chunks: tuple[tuple[int, str, int, int, str], ...]  # (index, chunk_id, start, end, content_hash)
    chunk_text: dict[str, str]
    vector_order: tuple[str, ...]  # vector ids in the order the ingest upserts them
    unreachable: tuple[str, ...]  # stored vectors a query with their own embedding does not find

    @property
    def chunk_ids(self) -> list[str]:
        return [c[1] for c in self.chunks]

    @property
    def vector_ids(self) -> frozenset[str]:
        return frozenset(self.vector_order)


def make_reference(fake: FakeOpenAIServer, root: Path, name: str, text: str) -> Reference:
    data = root / name / "data"
    server = RawStdioServer(data, base_env(fake), root / name / "stderr.log")
    with server:
        result = server.call("artifact_ingest", ingest_args(text))
        assert not result.is_error, result.text
        assert result.structured is not None and result.structured["status"] == "ingested"
    assert server.process.returncode == 0, server.stderr()
    art_id = result.structured["artifact_id"]
    snap = snapshot(data)
    rows = [r for r in snap.artifact_rows if r["artifact_id"] == art_id]
    assert [r["status"] for r in rows] == ["committed"]
    version = rows[0]["version"]
    chunk_rows = [c for c in snap.chunk_rows if c["artifact_id"] == art_id and c["version"] == version]
    index_of = {c["chunk_id"]: c["chunk_index"] for c in chunk_rows}
    mine = [(vid, m) for vid, m in snap.vectors["chunk"].items() if m["artifact_id"] == art_id]
    order = tuple(vid for vid, m in sorted(mine, key=lambda vm: (index_of[vm[1]["record_id"]], vm[1]["piece"])))
    ref = Reference(
        text=text, art_id=art_id, version=version, content_hash=rows[0]["content_hash"], data_dir=data,
        chunks=tuple((c["chunk_index"], c["chunk_id"], c["start_char"], c["end_char"], c["content_hash"])
                     for c in chunk_rows),
        chunk_text={c["chunk_id"]: c["content"] for c in chunk_rows}, vector_order=order,
        unreachable=tuple(unreachable_vectors(data)["chunk"]))
    assert ref.content_hash == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert result.structured["num_chunks"] == len(ref.chunks)
    check_consistent(snap, art_id, ref)
    return ref


# ------------------------------------------------------------------------------------ the checks

def check_consistent(snap: StoreSnapshot, art_id: str, visible: Reference | None) -> None:
    """Rows and vectors agree exactly; ``art_id`` is absent (None) or exactly ``visible``."""
    assert not snap.vectors["other"], f"vectors outside the live collections: {sorted(snap.vectors['other'])[:3]}"
    pending = [(r["artifact_id"], r["version"]) for r in snap.artifact_rows if r["status"] != "committed"]
    assert not pending, f"pending (uncommitted) artifact rows remain: {pending}"
    committed = {(r["artifact_id"], r["version"]): r for r in snap.artifact_rows}
    assert len({a for a, _ in committed}) == len(committed), f"an artifact with two committed versions: {committed}"

    # Rows: every chunk row belongs to a committed artifact row, which has exactly its num_chunks rows.
    rows_by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in snap.chunk_rows:
        rows_by[(c["artifact_id"], c["version"])].append(c)
    orphan_rows = sorted(set(rows_by) - set(committed))
    assert not orphan_rows, f"orphan chunk rows (no committed artifact row) for {orphan_rows}"
    for key, row in committed.items():
        indexes = [c["chunk_index"] for c in rows_by.get(key, [])]
        expected = list(range(row["num_chunks"])) if row["is_chunked"] else []
        assert indexes == expected, f"{key}: chunk rows {len(indexes)} but num_chunks {row['num_chunks']}"

    # Vectors: each belongs to a committed version's row (record_id, version), and each row has its vectors.
    ids_of = {key: {c["chunk_id"] for c in rows} for key, rows in rows_by.items()}
    pieces: dict[tuple[str, tuple[str, str]], list[int]] = defaultdict(list)
    for vid, meta in snap.vectors["chunk"].items():
        key = (meta.get("artifact_id"), meta.get("version"))
        assert key in committed, f"orphan vector {vid} (artifact {key[0]} version {key[1]} has no committed row)"
        assert meta.get("record_id") in ids_of.get(key, set()), f"vector {vid} has no chunk row {meta.get('record_id')}"
        assert vid == f"{meta['record_id']}::{meta['version']}::{meta['piece']}", f"vector id {vid} vs {meta}"
        pieces[(meta["record_id"], key)].append(meta["piece"])
    for key, ids in ids_of.items():
        missing = sorted(cid for cid in ids if (cid, key) not in pieces)
        assert not missing, f"{len(missing)} chunk rows of {key} have no vector, e.g. {missing[:3]}"
    assert all(sorted(p) == list(range(len(p))) for p in pieces.values()), "a chunk's vector pieces are not 0..n-1"
    for vid, meta in snap.vectors["artifact"].items():
        key = (meta.get("artifact_id"), meta.get("version"))
        assert key in committed and not committed[key]["is_chunked"], f"orphan artifact vector {vid}"
        assert meta.get("record_id") == key[0], f"artifact vector {vid} owned by {meta.get('record_id')}"

    # This artifact: absent, or exactly the reference (rows, offsets, vector ids, reconstructable text).
    mine = [r for r in snap.artifact_rows if r["artifact_id"] == art_id]
    if visible is None:
        assert not mine, f"{art_id} should be absent, found versions {[r['version'] for r in mine]}"
        assert not [v for col in snap.vectors.values() for v, m in col.items() if m.get("artifact_id") == art_id]
        return
    assert [(r["version"], r["content_hash"], r["num_chunks"], bool(r["is_chunked"])) for r in mine] == [
        (visible.version, visible.content_hash, len(visible.chunks), True)]
    rows = rows_by[(art_id, visible.version)]
    assert tuple((c["chunk_index"], c["chunk_id"], c["start_char"], c["end_char"], c["content_hash"])
                 for c in rows) == visible.chunks
    mine_vectors = {vid for vid, m in snap.vectors["chunk"].items() if m["artifact_id"] == art_id}
    assert mine_vectors == visible.vector_ids, (
        f"vectors differ from an uninterrupted ingest: {len(mine_vectors - visible.vector_ids)} extra, "
        f"{len(visible.vector_ids - mine_vectors)} missing")
    end = 0
    for c in rows:  # the chunks tile the text: reconstructable byte for byte
        assert c["content"] == visible.text[c["start_char"]:c["end_char"]]
        assert c["start_char"] <= end, f"gap before chunk {c['chunk_index']}"
        end = max(end, c["end_char"])
    assert rows[0]["start_char"] == 0 and end == len(visible.text)


def check_get(server: RawStdioServer, art_id: str, visible: Reference | None) -> None:
    got = server.call("artifact_get", {"artifact_id": art_id, "include_content": True, "include_chunks": True})
    if visible is None:
        assert got.is_error and "not found" in got.text, f"artifact_get returned an absent artifact: {got.text[:300]}"
        return
    assert not got.is_error, f"artifact_get failed: {got.text[:500]}"
    body = got.structured or {}
    assert body["metadata"]["content_hash"] == visible.content_hash, "artifact_get shows the wrong version"
    assert body["metadata"]["num_chunks"] == len(visible.chunks)
    assert [c["chunk_id"] for c in body["chunks"]] == visible.chunk_ids, "artifact_get returned partial chunks"
    assert body["content"] == visible.text, "artifact_get content differs from the ingested text"


def check_search(server: RawStdioServer, tool: str, art_id: str, probe: tuple[str, str],
                 visible: Reference | None, expand: bool = False, limit: int = 1) -> str | None:
    """Any hit of ``art_id`` is a chunk of the visible version with its content (asserted).

    Returns a note when a probe equal to one of the visible chunks did not find that very chunk
    first: its vector is stored but unreachable (see test_search_reaches_every_vector_after_recovery).
    One artifact gives at most one result; a limit above 1 makes the search widen its vector fetch
    round by round until it has read every vector of the index (slow, so done once per restart).
    """
    probe_id, probe_text = probe
    arguments: dict[str, Any] = {"query": probe_text, "limit": limit}
    if expand:
        arguments["expand_neighbors"] = True
    found = server.call(tool, arguments)
    assert not found.is_error, f"{tool} failed: {found.text[:500]}"
    hits = [h for h in (found.structured or {})["results"] if h.get("artifact_id") == art_id]
    if visible is None:
        assert not hits, f"{tool} returned a chunk of an artifact that must be absent: {hits[0]['id']}"
        return None
    assert hits, f"{tool} did not find the visible artifact for a query equal to one of its chunks"
    for hit in hits:
        assert hit["type"] == "chunk" and hit["id"] in visible.chunk_text, f"{tool} returned {hit['id']}, not visible"
        if not expand:
            assert hit["content"] == visible.chunk_text[hit["id"]], f"{tool} returned content of another version"
    if expand:
        index = visible.chunk_ids.index(hits[0]["id"])
        around = visible.chunk_ids[max(index - 1, 0):index + 2]
        assert hits[0]["neighbors"] == [c for c in around if c != hits[0]["id"]], "neighbours of another version"
        assert hits[0]["content"] == "\n[CHUNK BOUNDARY]\n".join(visible.chunk_text[c] for c in around)
    if visible.chunk_text.get(probe_id) == probe_text and hits[0]["id"] != probe_id:
        return f"{tool} for the exact text of chunk {short(probe_id)} returned chunk {short(hits[0]['id'])}"
    return None


def short(record_id: str) -> str:
    return record_id.split("::", 1)[1]


def state_at_kill(snap: StoreSnapshot, point: str, target: Reference, prior: Reference | None) -> None:
    """What a kill at ``point`` must have left (read from a copy): proof the process died exactly there."""
    art_id = target.art_id
    rows = sorted((r["version"], r["status"]) for r in snap.artifact_rows if r["artifact_id"] == art_id)
    expected: list[tuple[str, str]] = []
    if prior is not None and point not in COMMITTED_POINTS:
        expected.append((prior.version, "committed"))
    if point in COMMITTED_POINTS:
        expected.append((target.version, "committed"))
    elif point != "embedded":
        expected.append((target.version, "pending"))
    assert rows == sorted(expected), f"rows at the kill: {rows}, expected {expected}"
    if point != "embedded":
        written = [c for c in snap.chunk_rows if c["artifact_id"] == art_id and c["version"] == target.version]
        assert len(written) == len(target.chunks), "the pending rows are written in one transaction"
    new = {v for v, m in snap.vectors["chunk"].items() if m["artifact_id"] == art_id and m["version"] == target.version}
    if point.startswith("vectors_"):
        upserted = target.vector_order[:(int(point.split("_")[1]) + 1) * VECTOR_BATCH]
    elif point in COMMITTED_POINTS:
        upserted = target.vector_order
    else:
        upserted = ()
    assert new == set(upserted), f"{len(new)} vectors of the new version at the kill, expected {len(upserted)}"
    if prior is not None:
        old = {v for v, m in snap.vectors["chunk"].items()
               if m["artifact_id"] == art_id and m["version"] == prior.version}
        assert old == (set() if point == "old_vectors_deleted" else prior.vector_ids), "old version's vectors"


# ------------------------------------------------------------------------------------- scenarios

@dataclass(frozen=True)
class Outcome:
    kind: str
    point: str
    exit_code: int
    seconds: float
    phases: dict[str, float]
    search_misses: list[str]  # exact chunk probes through MCP that did not find their chunk first
    unreachable: dict[str, list[str]]  # stored vectors a query with their own embedding does not find


class Scenarios:
    """Runs the selected kill scenarios on a small pool, after the two reference ingests."""

    def __init__(self, fake: FakeOpenAIServer, root: Path, selected: list[tuple[str, str]]) -> None:
        self.fake, self.root = fake, root
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="crash-scenario")
        self.references = {name: self.pool.submit(make_reference, fake, root / "reference", name, text)
                           for name, text in (("v1", V1), ("v2", V2))}
        self.futures: dict[tuple[str, str], Future[Outcome]] = {
            key: self.pool.submit(self.run, *key) for key in selected}

    def reference(self, name: str) -> Reference:
        return self.references[name].result()

    def outcome(self, kind: str, point: str) -> Outcome:
        if (kind, point) not in self.futures:
            self.futures[(kind, point)] = self.pool.submit(self.run, kind, point)
        return self.futures[(kind, point)].result()

    def env(self, **extra: str) -> dict[str, str]:
        return base_env(self.fake, **extra)

    def run(self, kind: str, point: str) -> Outcome:
        started = time.monotonic()
        v1, v2 = self.reference("v1"), self.reference("v2")
        phases: dict[str, float] = {}
        mark = time.monotonic()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = round(now - mark, 2)
            mark = now

        target, prior = (v1, None) if kind == "first" else (v2, v1)
        work = self.root / f"{kind}-{point}"
        data = work / "data"
        if prior is not None:
            shutil.copytree(prior.data_dir, data)  # v1 ingested completely by a server that then stopped

        # 1. Ingest, killed at the checkpoint: the call fails because the process died of SIGKILL.
        server = RawStdioServer(data, self.env(MEMTROVE_CRASH_AT=point), work / "crashed.log")
        with server:
            try:
                answer = server.call("artifact_ingest", ingest_args(target.text))
            except ServerDied as died:
                exit_code = died.returncode
            else:
                pytest.fail(f"the server was not killed at {point!r}; it answered {answer.text[:300]}")
        assert exit_code == -9, f"the ingesting server exited with {exit_code}, not SIGKILL; {server.stderr()[-2000:]}"
        lap("killed")

        # 2. What the kill left, read from a copy (the real directory stays untouched until the restart).
        copy = work / "at-kill"
        shutil.copytree(data, copy)
        state_at_kill(snapshot(copy, read_only=False), point, target, prior)
        shutil.rmtree(copy)
        lap("at_kill")

        # 3. Restart without the fault: reads never show a partial artifact, and the start-up repair runs.
        visible = target if point in COMMITTED_POINTS else prior
        probes = [(ref.chunk_ids[i], ref.chunk_text[ref.chunk_ids[i]])
                  for ref, i in ((v1, 0), (v1, len(v1.chunks) // 3), (v1, -1), (v2, -1))]
        server = RawStdioServer(data, self.env(MEMTROVE_WARMUP="true"), work / "restarted.log")
        repaired = work / "repaired"
        misses: list[str | None] = []
        with server:
            check_get(server, target.art_id, visible)  # artifact_get does not wait for the repair
            for probe in probes:  # hybrid_search is the first call that waits for the repair
                misses.append(check_search(server, "hybrid_search", target.art_id, probe, visible))
            for probe in probes[2:]:
                misses.append(check_search(server, "artifact_search", target.art_id, probe, visible))
            check_search(server, "hybrid_search", target.art_id, probes[1], visible, expand=True)
            check_search(server, "hybrid_search", target.art_id, probes[3], visible, limit=10)
            check_get(server, target.art_id, visible)
            # The repaired stores, as the live server left them on disk: frozen (SIGSTOP), copied.
            with server.frozen():
                shutil.copytree(data, repaired)
            lap("restarted")

            # 4. Re-ingesting converges to an uninterrupted ingest; once more changes nothing.
            first = server.call("artifact_ingest", ingest_args(target.text))
            assert not first.is_error, first.text
            expected = "unchanged" if point in COMMITTED_POINTS else ("ingested" if prior is None else "replaced")
            assert (first.structured or {})["status"] == expected
            assert first.structured["artifact_id"] == target.art_id
            assert first.structured["num_chunks"] == len(target.chunks)
            again = server.call("artifact_ingest", ingest_args(target.text))
            assert not again.is_error and (again.structured or {})["status"] == "unchanged", again.text
            check_get(server, target.art_id, target)
            for probe in probes:
                misses.append(check_search(server, "hybrid_search", target.art_id, probe, target))
        assert server.process.returncode == 0, server.stderr()[-2000:]
        lap("converged")
        check_consistent(snapshot(repaired, read_only=False), target.art_id, visible)
        unreachable = {"after repair": unreachable_vectors(repaired)["chunk"]}
        lap("repaired_state")
        check_consistent(snapshot(data), target.art_id, target)  # after a clean stop
        unreachable["after re-ingest"] = unreachable_vectors(data)["chunk"]
        lap("final_state")
        shutil.rmtree(work)
        outcome = Outcome(kind, point, exit_code, round(time.monotonic() - started, 1), phases,
                          [m for m in misses if m], unreachable)
        print(f"crash scenario {outcome}", flush=True)
        return outcome


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


@pytest.fixture(scope="module")
def scenarios(fake: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory,
              request: pytest.FixtureRequest) -> Iterator[Scenarios]:
    selected = [(KINDS[item.originalname], item.callspec.params["point"]) for item in request.session.items
                if getattr(item, "module", None) is request.module and item.originalname in KINDS]
    runner = Scenarios(fake, tmp_path_factory.mktemp("crash"), selected)
    try:
        yield runner
    finally:
        runner.pool.shutdown(wait=True, cancel_futures=True)


# ----------------------------------------------------------------------------------------- tests

def test_an_embedding_failure_part_way_writes_nothing(tmp_path: Path) -> None:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        server = RawStdioServer(tmp_path / "data", base_env(fake, OPENAI_MAX_RETRIES="1"), tmp_path / "stderr.log")
        with server:
            warm = server.call("hybrid_search", {"query": "warm up"})  # the repair ran and the client is built
            assert not warm.is_error, warm.text
            before = len(fake.requests)
            fake.fail_on(before + 3, 500)  # two batches embed, the third fails; no retry is left
            failed = server.call("artifact_ingest", ingest_args(V1))
            assert failed.is_error
            assert failed.text.startswith("Failed to ingest artifact: embedding generation failed for "), failed.text
            assert "No data was written" in failed.text, failed.text
            left = re.match(r"Failed to ingest artifact: embedding generation failed for (\d+) chunks?\.", failed.text)
            assert left and 0 < int(left.group(1)) < 1121, failed.text
            assert len(fake.requests) == before + 3, "the ingest went on embedding after a failure"
            searched = server.call("hybrid_search", {"query": V1[:200], "limit": 50})
            assert not searched.is_error and searched.structured["count"] == 0
        assert server.process.returncode == 0, server.stderr()
        snap = snapshot(tmp_path / "data")
    assert snap.artifact_rows == [] and snap.chunk_rows == [], "rows were written for a failed ingest"
    assert snap.vectors == {"artifact": {}, "chunk": {}, "other": {}}, "vectors were written for a failed ingest"
    mentioned = [r for r in snap.audit_rows if any(i.startswith("art_") for i in json.loads(r["item_ids"]))]
    assert mentioned == [], f"the audit log records an ingest that wrote nothing: {mentioned}"


def test_reads_at_every_checkpoint_of_a_replacement_see_one_complete_version(
        fake: FakeOpenAIServer, tmp_path: Path) -> None:
    """In-process, real SQLite + Chroma: at each checkpoint of replacing V1 by V2, get and search see
    exactly V1 (before the commit) or exactly V2 (from the commit on), never a mix, never a gap.

    V1 and V2 share ~570 chunks (same index and content, so the same chunk id); probing with a
    chunk's exact text must return that very chunk of the visible version.
    """
    from config.settings import Settings
    from domain.usecases.artifact_input import IngestRequest
    from domain.usecases.search import SearchRequest
    from entrypoints.runtime import Runtime

    settings = Settings(memtrove_data_dir=tmp_path / "data", memtrove_embedder="openai-compatible",
                        openai_base_url=fake.base_url, openai_embed_model="fake", openai_embed_dims=DIMS,
                        chunk_target_tokens=40, chunk_overlap_tokens=8, single_piece_max_tokens=40,
                        memtrove_warmup=False, memtrove_crash_at=None)
    observed: list[tuple[str, str, str, str, Any]] = []  # (point, tool, probe id, probe text, result)
    with chroma_exclusive():
        runtime = Runtime(settings)
        try:
            runtime.start()
            runtime.ensure_ready()
            uc = runtime.app.use_cases
            first = uc.ingest_artifact()(IngestRequest("doc", SOURCE["source_system"], V1, SOURCE["source_id"]))
            art_id = first.artifact.id
            v1_chunks = {c.id: c.content for c in first.chunks}
            shared = [c for c in first.chunks if V2[c.start_char:c.end_char] == c.content][:600]
            probes = [(c.id, c.content) for c in (shared[5], shared[300], shared[-40])]
            probes += [(first.chunks[-1].id, first.chunks[-1].content)]  # V1 only
            probes += [("v2-late", V2[-3000:-2900])]  # V2 only (not chunk-aligned)

            def observe(point: str) -> None:
                observed.append((point, "artifact_get", "", "", uc.get_artifact()(art_id, True, True)))
                for probe_id, text in probes:
                    observed.append((point, "hybrid_search", probe_id, text,
                                     uc.hybrid_search()(SearchRequest(text, 1)).hits))
                    observed.append((point, "artifact_search", probe_id, text, uc.artifact_search()(text, 1)))

            second = uc.ingest_artifact(checkpoint=observe)(
                IngestRequest("doc", SOURCE["source_system"], V2, SOURCE["source_id"]))
            assert second.status == "replaced" and second.artifact.id == art_id
        finally:
            runtime.shutdown()
    v2_chunks = {c.id: c.content for c in second.chunks}
    points = list(dict.fromkeys(point for point, *_ in observed))
    batches = -(-len(v2_chunks) // VECTOR_BATCH)
    assert points == ["embedded", "pending_written", *(f"vectors_{k}" for k in range(batches)), *COMMITTED_POINTS]

    problems: list[str] = []
    for point, tool, probe_id, text, result in observed:
        chunks, content = (v2_chunks, V2) if point in COMMITTED_POINTS else (v1_chunks, V1)
        version = "V2" if point in COMMITTED_POINTS else "V1"
        if tool == "artifact_get":
            if result.content != content or [c.id for c in result.chunks] != list(chunks):
                problems.append(f"{point}: artifact_get is not exactly {version}")
            continue
        mine = [h for h in result if h.fields.get("artifact_id") == art_id]
        wrong = [h.id for h in mine if chunks.get(h.id) != h.content]
        if wrong or not mine:
            problems.append(f"{point}: {tool} returned {wrong or 'nothing'} (not chunks of {version})")
        elif chunks.get(probe_id) == text and mine[0].id != probe_id:
            problems.append(f"{point}: {tool} for the exact text of {version}'s chunk {probe_id.split('::', 1)[1]} "
                            f"returned chunk {mine[0].id.split('::', 1)[1]} instead")
    assert not problems, (
        f"{len(problems)} reads during the replacement did not show exactly one complete version:\n"
        + "\n".join(problems[:20]))


def test_reference_ingests(scenarios: Scenarios) -> None:
    """The uninterrupted ingests every scenario converges to; their sizes give the checkpoints."""
    v1, v2 = scenarios.reference("v1"), scenarios.reference("v2")
    assert v1.art_id == v2.art_id and v1.version != v2.version
    for ref, batches in ((v1, BATCHES_V1), (v2, BATCHES_V2)):
        assert 1000 <= len(ref.chunks) and -(-len(ref.vector_order) // VECTOR_BATCH) == batches, (
            f"{len(ref.chunks)} chunks / {len(ref.vector_order)} vectors no longer make {batches} vector batches")
    shared = set(v1.chunk_ids) & set(v2.chunk_ids)
    assert len(shared) > 500, "the versions should share chunk ids (same index, same content)"
    assert len(set(v1.chunk_text.values())) == len(v1.chunks), "chunks should all differ"


@pytest.mark.parametrize("point", POINTS_FIRST)
def test_first_ingest_killed_at(point: str, scenarios: Scenarios) -> None:
    assert scenarios.outcome("first", point).exit_code == -9


@pytest.mark.parametrize("point", POINTS_REPLACE)
def test_replacement_killed_at(point: str, scenarios: Scenarios) -> None:
    assert scenarios.outcome("replace", point).exit_code == -9


def test_search_reaches_every_vector_after_recovery(scenarios: Scenarios) -> None:
    """After a crash and its repair, and after re-ingesting, every stored chunk vector is findable.

    Each vector is queried with its own embedding (all are distinct, so it must come first). The
    uninterrupted reference ingests are the control. Rows and vectors may agree exactly (the
    scenario tests) while the index still cannot reach some vectors: those chunks are then stored
    but can never be found by artifact_search / hybrid_search. Chroma 1.5.9 does that after deletes
    (chroma-core/chroma#7758), and the repair deletes the interrupted version's vectors which the
    retry then adds again under the same ids.
    """
    control = {name: scenarios.reference(name).unreachable for name in ("v1", "v2")}
    found: list[str] = []
    for (kind, point), future in scenarios.futures.items():
        if future.exception() is not None:
            continue  # that scenario's own test reports it
        outcome = future.result()
        for stage, ids in outcome.unreachable.items():
            if ids:
                found.append(f"{kind} ingest killed at {point}, {stage}: {len(ids)} unreachable, e.g. "
                             f"{', '.join(short(i) for i in ids[:3])}")
        found += [f"{kind} ingest killed at {point}: {miss}" for miss in outcome.search_misses]
    assert not any(control.values()), f"vectors unreachable even without a crash: {control}"
    assert not found, (
        f"{len(found)} findings of stored chunk vectors that search cannot reach after crash recovery "
        f"(none in the uninterrupted control ingests):\n" + "\n".join(found[:30]))


def test_kill_points_cover_the_write_path(scenarios: Scenarios) -> None:
    """At least 20 distinct checkpoints, in the write path's order, each really killed (-9) and checked."""
    if set(POINTS_FIRST) - {p for k, p in scenarios.futures if k == "first"}:
        pytest.skip("only part of the kill points was selected")
    assert len(POINTS_FIRST) >= 20 and len(set(POINTS_FIRST)) == len(POINTS_FIRST)
    killed = {point for (kind, point), future in scenarios.futures.items()
              if future.exception() is None and future.result().exit_code == -9}
    assert killed >= set(POINTS_FIRST), f"kill points not verified: {sorted(set(POINTS_FIRST) - killed)}"
    assert len(killed) >= 20
