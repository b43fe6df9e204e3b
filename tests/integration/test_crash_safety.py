"""Crash safety of artifact ingestion on the durable write path, proved on real processes.

A real ``memtrove serve`` (stdio, in-process: MEMTROVE_SHARED=false; an OpenAI-compatible embedder
against a local fake) ingests an artifact of ~1,120 chunks and is SIGKILLed (MEMTROVE_CRASH_AT) at
every checkpoint of the write path: pending_written (the version written pending with its ingest
job), vectors_0 ... vectors_8 (each batch of up to 128 pieces stored in SQL with the job's progress),
committed (one transaction: visible, the old version dropped, the outbox queued). That is 11 points
for a first ingest, 4 for a replacement of a complete older version, and 3 on PostgreSQL; each in a
fresh data directory (and database). Per kill:

1. the ingest call fails because the process died, with exit status -9;
2. the stores at the kill (a copy of the data dir) show the process died exactly there: the pending
   version and a job whose progress counts the records of the stored batches, exactly the first k+1
   batches' vectors stored pending (the bytes an uninterrupted ingest stores), Chroma untouched; or
   the committed version, its vectors only and its outbox items queued;
3. a new server (no fault) finishes the job by itself (at once on SQLite; on PostgreSQL once the dead
   worker's lease ran out: waited for in one scenario, made to have run out in the others) embedding
   only the pieces not stored yet (the fake counts every text it embeds); the client's retry of the
   call answers "indexing" (or "unchanged" once done); and artifact_get, hybrid_search and
   artifact_search, polled while it recovers, show the old complete version (or the "indexing"
   status of a first ingest), then the new complete version: never a mix, never back;
4. once its vector worker has replayed the outbox, its stores (copied while it is frozen: what a kill
   then would leave) are those of an uninterrupted ingest (artifact, chunk, lexical and vector rows,
   read directly), Chroma holds exactly the committed vectors (same embeddings), and there is no
   pending row, job or outbox item; the Chroma collections present at the kill were not rebuilt
   (same ids) and the chroma dir holds the segments of live collections only;
5. re-ingesting the same content answers "unchanged"; after a clean stop the stores are the same.

test_search_reaches_every_vector_after_recovery then requires every stored vector of every scenario
to be found by a query with its own embedding (Chroma 1.5.9 loses some after deletes, see there).
Also here: an ingest shown as under way ("indexing", as a call past its budget answers) and killed
while it is still being cut is finished by the next server; an embedding failure part-way writes nothing; and reads
made in-process at every checkpoint of a live replacement see exactly one complete version.

The scenarios are independent processes; two run at a time on a pool (this is a 2-core box), each
test waits for its own scenario and reports its own failure.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from domain.ids import artifact_id, record_of
from domain.upkeep.vector_sync import filtered_fields
from domain.artifacts.ingest import EMBED_BATCH
from tests.support.crash_driver import QuickFakeOpenAIServer, RawStdioServer, ServerDied, document
from tests.support.store_state import (
    SqlState, StoreSnapshot, chroma_exclusive, clone_database, expire_leases, read_chroma, read_sql, snapshot,
    sqlite_url, unreachable_vectors, wait_until_drained,
)

pytestmark = pytest.mark.slow

WORKERS = 2
DIMS = 32
DOCUMENT_DELAY = 0.2  # seconds the restarted server's embedder takes per request: recovery can be watched

# Deterministic, non-repetitive documents. V2 replaces V1 under the same source id: it keeps V1's
# first half (~570 identical chunks, so identical chunk ids in both versions) and then differs.
V1 = document(7, 1140)
V2 = V1[:V1.index("\n\n", len(V1) // 2)] + "\n\n" + document(8, 570)
# What these documents cut into with CHUNK_TARGET_TOKENS=40 / CHUNK_OVERLAP_TOKENS=8 (one piece per
# chunk), checked against what the server really stored (test_reference_ingests).
BATCHES = 9  # 1,121 chunks each, stored in batches of up to EMBED_BATCH pieces

POINTS_FIRST = ["pending_written", *(f"vectors_{k}" for k in range(BATCHES)), "committed"]
POINTS_REPLACE = ["pending_written", f"vectors_{BATCHES // 2}", f"vectors_{BATCHES - 1}", "committed"]
# On PostgreSQL the restarted server must wait for the dead worker's lease (60 s): one scenario does
# (REAL_LEASE); in the others the lease is made to have run out before the restart.
POINTS_POSTGRES = [("first", "pending_written"), ("replace", f"vectors_{BATCHES // 2}"), ("replace", "committed")]
REAL_LEASE = {("postgresql", "first", "pending_written")}
TESTS = {"test_first_ingest_killed_at": ("sqlite", "first"), "test_replacement_killed_at": ("sqlite", "replace")}

SOURCE = {"artifact_type": "doc", "source_system": "crash-test", "source_id": "doc-A", "title": "Crash test doc",
          "ts": "2026-05-04T03:02:01+00:00"}  # a fixed ts: vector metadata equal to the reference's


def base_env(fake: QuickFakeOpenAIServer, database_url: str | None = None, **extra: str) -> dict[str, str]:
    env = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
           "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS), "CHUNK_TARGET_TOKENS": "40",
           "CHUNK_OVERLAP_TOKENS": "8", "SINGLE_PIECE_MAX_TOKENS": "40",
           "MEMTROVE_SHARED": "false", **extra}  # in-process: the SIGKILL must hit the server itself
    if database_url:
        env["MEMTROVE_DATABASE_URL"] = database_url
    return env


def ingest_args(text: str) -> dict[str, Any]:
    return {**SOURCE, "content": text}


def short(record_id: str) -> str:
    return record_id.split("::", 1)[1]


# ------------------------------------------------------------------------------ reference states

@dataclass(frozen=True)
class Reference:
    """The stores after an uninterrupted ingest of ``text``: what every interrupted one must end as."""

    text: str
    art_id: str
    version: str
    content_hash: str
    data_dir: Path
    database_url: str | None
    sql: SqlState
    inputs: tuple[str, ...]  # the texts embedded, in order (one per vector, in vector_order)
    vector_order: tuple[str, ...]  # chunk vector ids by chunk index and piece
    unreachable: tuple[str, ...]  # stored vectors a query with their own embedding does not find

    @property
    def chunk_rows(self) -> list[dict[str, Any]]:
        return [c for c in self.sql.chunk_rows if c["artifact_id"] == self.art_id]

    @property
    def chunk_ids(self) -> list[str]:
        return [c["chunk_id"] for c in self.chunk_rows]

    @property
    def chunk_text(self) -> dict[str, str]:
        return {c["chunk_id"]: c["content"] for c in self.chunk_rows}

    @property
    def batches(self) -> list[list[str]]:
        """Vector ids per stored batch: whole records (a chunk's pieces together), at most EMBED_BATCH pieces."""
        batches: list[list[str]] = [[]]
        for _, ids in groupby(self.vector_order, key=record_of):
            piece_ids = list(ids)
            if batches[-1] and len(batches[-1]) + len(piece_ids) > EMBED_BATCH:
                batches.append([])
            batches[-1] += piece_ids
        return batches

    def stored_by(self, point: str) -> list[str]:
        """The vector ids stored when the ingest reaches ``point``."""
        if point == "pending_written":
            return []
        if point == "committed":
            return list(self.vector_order)
        return [vid for batch in self.batches[:int(point.split("_")[1]) + 1] for vid in batch]


def make_reference(root: Path, name: str, text: str, database_url: str | None = None) -> Reference:
    data = root / name / "data"
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        server = RawStdioServer(data, base_env(fake, database_url), root / name / "stderr.log")
        with server:
            result = server.call("artifact_ingest", ingest_args(text))
            assert not result.is_error, result.text
            assert result.structured is not None and result.structured["status"] == "ingested"
            inputs = tuple(fake.inputs())
            wait_until_drained(database_url or sqlite_url(data))  # the vector worker's part
        assert server.process.returncode == 0, server.stderr()[-2000:]
    art_id = result.structured["artifact_id"]
    snap = snapshot(data, database_url)
    [row] = [r for r in snap.sql.artifact_rows if r["artifact_id"] == art_id]
    index_of = {c["chunk_id"]: c["chunk_index"] for c in snap.sql.chunk_rows}
    order = sorted((vid for (col, vid) in snap.sql.vectors if col == "chunk"),
                   key=lambda vid: (index_of[record_of(vid)], snap.sql.vectors[("chunk", vid)].meta["piece"]))
    ref = Reference(text=text, art_id=art_id, version=row["version"], content_hash=row["content_hash"], data_dir=data,
                    database_url=database_url, sql=snap.sql, inputs=inputs, vector_order=tuple(order),
                    unreachable=tuple(unreachable_vectors(data)["chunk"]))
    assert result.structured["num_chunks"] == len(ref.chunk_ids)
    assert len(inputs) == len(order), f"{len(inputs)} texts embedded for {len(order)} vectors"
    check_complete(snap, ref)
    assert audit_trail(snap.sql, art_id) == [("ingested", ref.version)]  # the commit is the audited write
    return ref


# ------------------------------------------------------------------------------------ the checks

def lexical_of(sql: SqlState, art_id: str) -> set[tuple[str, str, str | None, str | None]]:
    return {entry for entry in sql.lexical if entry[2] == art_id}


def audit_trail(sql: SqlState, art_id: str) -> list[tuple[str, str | None]]:
    return [(r["action"], json.loads(r["detail"]).get("version")) for r in sql.audit_rows
            if art_id in json.loads(r["item_ids"])]


def without_ingest_time(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "ingested_at"}


def same_vector(a: bytes, b: bytes) -> bool:
    """Chroma's float32 vector and the store's copy (half precision, read back as float32) are equal,
    up to the last bit (Chroma's cosine index normalises what it stores)."""
    import numpy as np

    from adapters.vectors.blobs import decode

    x, y = np.frombuffer(a, dtype=np.float32), decode(b)
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=0.0, atol=1e-6))


def check_complete(snap: StoreSnapshot, ref: Reference) -> None:
    """Nothing in flight, rows and vectors agree exactly, and ``ref.art_id`` is exactly ``ref``'s version.

    Compared with ``ref``'s own stores (an uninterrupted ingest): the artifact row (but its ingest
    time), chunk rows, lexical entries and the vectors table, byte for byte; Chroma holds exactly the
    table's committed vectors, with their embeddings; its collections are the live ones only.
    """
    sql, chroma, art_id = snap.sql, snap.chroma, ref.art_id
    pending = [(r["artifact_id"], r["version"]) for r in sql.artifact_rows if r["status"] != "committed"]
    assert not pending, f"pending (uncommitted) artifact rows remain: {pending}"
    assert not sql.jobs, f"ingest jobs remain: {sql.jobs}"
    assert not sql.outbox, f"{len(sql.outbox)} outbox items were not replayed: {sql.outbox[:4]}"
    rows = [without_ingest_time(r) for r in sql.artifact_rows if r["artifact_id"] == art_id]
    assert rows == [without_ingest_time(r) for r in ref.sql.artifact_rows if r["artifact_id"] == art_id], (
        f"artifact rows differ from an uninterrupted ingest: {[(r['version'], r['status']) for r in rows]}")
    chunks = [c for c in sql.chunk_rows if c["artifact_id"] == art_id]
    assert chunks == ref.chunk_rows, f"chunk rows differ from an uninterrupted ingest ({len(chunks)} rows)"
    end = 0
    for c in chunks:  # the chunks tile the text: reconstructable byte for byte
        assert c["content"] == ref.text[c["start_char"]:c["end_char"]] and c["start_char"] <= end
        end = max(end, c["end_char"])
    assert chunks[0]["start_char"] == 0 and end == len(ref.text)
    assert lexical_of(sql, art_id) == lexical_of(ref.sql, art_id), "lexical entries differ"
    assert lexical_of(ref.sql, art_id) == {("chunk", c, art_id, ref.version) for c in ref.chunk_ids}

    extra, missing = sql.vectors.keys() - ref.sql.vectors.keys(), ref.sql.vectors.keys() - sql.vectors.keys()
    assert not extra and not missing, f"vectors table: {len(extra)} extra (e.g. {sorted(extra)[:2]}), " \
                                      f"{len(missing)} missing (e.g. {sorted(missing)[:2]})"
    changed = sorted(key for key, row in sql.vectors.items() if row != ref.sql.vectors[key])
    assert not changed, f"{len(changed)} vector rows differ from an uninterrupted ingest, e.g. {changed[:2]}"
    assert all(not row.pending and row.owner == art_id and row.version == ref.version
               for row in sql.vectors.values())
    assert [vid for (col, vid) in sql.vectors if col != "chunk"] == []

    # Chroma holds exactly the committed vectors, with their embeddings and metadata.
    assert not chroma.vectors["other"], f"vectors outside the live collections: {sorted(chroma.vectors['other'])[:3]}"
    for kind, held in chroma.vectors.items():
        if kind == "other":
            continue
        stored = {vid: row for (col, vid), row in sql.vectors.items() if col == kind}
        assert held.keys() == stored.keys(), (
            f"Chroma's {kind} collection: {len(held.keys() - stored.keys())} vectors the store does not hold, "
            f"{len(stored.keys() - held.keys())} of the store's missing")
        for vid, row in stored.items():
            # Chroma keeps what it filters on (adapters/vectors/chroma_filters.py): no access keys, no version.
            assert held[vid] == filtered_fields(kind, {**row.meta, "record_id": record_of(vid)}), \
                f"metadata of {vid} in Chroma"
            assert same_vector(chroma.embeddings[kind][vid], row.embedding), f"Chroma's embedding of {vid} differs"
    assert not [n for n in chroma.collections if n.startswith("rebuild__")], f"rebuild copies: {chroma.collections}"
    assert not chroma.strays, f"orphaned files in the chroma dir: {chroma.strays}"


def state_at_kill(snap: StoreSnapshot, point: str, target: Reference, prior: Reference | None) -> None:
    """What a kill at ``point`` must have left: proof the process died exactly there."""
    sql, art_id = snap.sql, target.art_id
    rows = sorted((r["version"], r["status"]) for r in sql.artifact_rows if r["artifact_id"] == art_id)
    committed = point == "committed"
    expected = [(target.version, "committed" if committed else "pending")]
    if prior is not None and not committed:
        expected.append((prior.version, "committed"))
    assert rows == sorted(expected), f"rows at the kill: {rows}, expected {expected}"
    written = [c for c in sql.chunk_rows if c["artifact_id"] == art_id and c["version"] == target.version]
    assert written == target.chunk_rows, "the pending rows are written in one transaction"
    lexical = lexical_of(target.sql, art_id) | (lexical_of(prior.sql, art_id) if prior and not committed else set())
    assert lexical_of(sql, art_id) == lexical, "lexical entries at the kill"

    stored = target.stored_by(point)
    batches = target.batches
    records = len({record_of(vid) for vid in stored})
    if committed:
        assert not sql.jobs, f"a job outlived its commit: {sql.jobs}"
        assert sql.outbox and {owner for _, owner in sql.outbox} == {art_id} and ("chunk", art_id) in sql.outbox, (
            f"the commit queued {sql.outbox}, not the artifact's vectors")
    else:
        [job] = sql.jobs
        assert (job["artifact_id"], job["version"], job["status"], job["done"], job["total"]) == (
            art_id, target.version, "indexing", records, len(target.chunk_ids)), f"the job at the kill: {job}"
        assert job["lease_owner"], job
        assert not sql.outbox, f"outbox items before any commit: {sql.outbox}"
    new = {vid: row for (col, vid), row in sql.vectors.items() if col == "chunk" and row.version == target.version}
    assert sorted(new) == sorted(stored), (
        f"{len(new)} vectors of the new version stored at the kill, expected the first "
        f"{point.split('_')[1] if point.startswith('vectors_') else '-'} of {len(batches)} batches: {len(stored)}")
    for vid, row in new.items():
        assert row == replace(target.sql.vectors[("chunk", vid)], pending=not committed), f"stored vector {vid}"
    old = {key: row for key, row in sql.vectors.items() if row.version != target.version}
    assert old == ({} if prior is None or committed else prior.sql.vectors), "the old version's vectors"

    # Chroma is written by the outbox worker only: before the commit it holds what it held.
    mine = {vid for vid, m in snap.chroma.vectors["chunk"].items() if m.get("artifact_id") == art_id}
    if committed:
        allowed = set(target.vector_order) | (set(prior.vector_order) if prior else set())
        assert mine <= allowed, f"vectors in Chroma of neither version: {sorted(mine - allowed)[:3]}"
    else:
        assert mine == (set(prior.vector_order) if prior else set()), "Chroma changed before the commit"


# --------------------------------------------------------------------------- watching a recovery

@dataclass
class Watch:
    """Reads of one artifact while a server recovers it, each classified as showing the state before
    the commit (the old complete version, or a first ingest's "indexing" status) or after it (the new
    complete version). Every read must be one of them, and after an "after" no read is "before"."""

    server: RawStdioServer
    target: Reference
    prior: Reference | None
    done: int  # the job's progress at the kill: it only grows
    after: bool = False
    reads: Counter[str] = field(default_factory=Counter)
    queries: list[str] = field(default_factory=list)  # every text a search embedded
    stalled: list[tuple[float, int]] = field(default_factory=list)  # (wall time at the call, progress)

    def note(self, what: str, states: set[str], detail: str) -> None:
        assert states, f"{what} showed neither the old complete version nor the new one: {detail}"
        assert "after" in states or not self.after, f"{what} went back to before the commit: {detail}"
        self.after = self.after or states == {"after"}
        self.reads[f"{what}:{'/'.join(sorted(states))}"] += 1

    def get(self) -> bool:
        """artifact_get, checked; True once it shows the new version committed (and nothing under way)."""
        target, prior = self.target, self.prior
        asked = time.time()
        got = self.server.call("artifact_get", {"artifact_id": target.art_id, "include_content": True,
                                                "include_chunks": True})
        assert not got.is_error, f"artifact_get failed during the recovery: {got.text[:400]}"
        body = got.structured or {}
        states = set()
        if self._shows(body, target) and "new_version" not in body:
            states.add("after")
        under_way = body.get("new_version") if prior is not None and self._shows(body, prior) else (
            body if prior is None and "metadata" not in body else None)
        if under_way is not None:
            progress = under_way.get("chunks_done", -1)
            if (under_way.get("status"), under_way.get("version"), under_way.get("chunks_total")) == (
                    "indexing", target.version, len(target.chunk_ids)) and self.done <= progress <= len(target.chunk_ids):
                states.add("before")
                self.done = progress
                self.stalled.append((asked, progress))
        self.note("artifact_get", states, json.dumps({k: v for k, v in body.items() if k not in ("content", "chunks")}))
        return self.after

    @staticmethod
    def _shows(body: dict[str, Any], ref: Reference) -> bool:
        meta = body.get("metadata") or {}
        return (body.get("status") == "indexed" and meta.get("content_hash") == ref.content_hash
                and meta.get("num_chunks") == len(ref.chunk_ids) and body.get("content") == ref.text
                and [c["chunk_id"] for c in body.get("chunks", [])] == ref.chunk_ids)

    def search(self, tool: str, probe: tuple[str, str], expand: bool = False, limit: int = 1) -> str | None:
        """One search, checked; a note when a probe equal to a visible chunk did not find that chunk first."""
        probe_id, text = probe
        arguments: dict[str, Any] = {"query": text, "limit": limit}
        if expand:
            arguments["expand_neighbors"] = True
        found = self.server.call(tool, arguments)
        self.queries.append(text)
        assert not found.is_error, f"{tool} failed during the recovery: {found.text[:400]}"
        hits = [h for h in (found.structured or {})["results"] if h.get("artifact_id") == self.target.art_id]
        early = bool(hits) and all(h.get("indexing") is True for h in hits)
        states = {state for state, ref in (("before", self.prior), ("after", self.target))
                  if not early and self._hits_of(hits, ref, expand)}
        if self.prior is None and not hits:
            states.add("before")  # a first ingest, found by nothing yet (its chunks are being cut)
        if self.prior is None and early and all(h["type"] == "chunk" and h["id"] in self.target.chunk_text
                                                and "semantic" not in h["signals"] for h in hits):
            states.add("before")  # a first ingest under way: its chunks found by their words, and marked so
        self.note(tool, states, f"{[h['id'] for h in hits]} for the probe {short(probe_id) if '::' in probe_id else probe_id}")
        visible = self.target if "after" in states else self.prior
        if hits and visible is not None and visible.chunk_text.get(probe_id) == text and hits[0]["id"] != probe_id:
            return f"{tool} for the exact text of chunk {short(probe_id)} returned chunk {short(hits[0]['id'])}"
        return None

    @staticmethod
    def _hits_of(hits: list[dict[str, Any]], ref: Reference | None, expand: bool) -> bool:
        if ref is None or not hits:
            return False
        text, ids = ref.chunk_text, ref.chunk_ids
        for hit in hits:
            if hit["type"] != "chunk" or hit["id"] not in text:
                return False
            if not expand and hit["snippet"].strip("…") not in text[hit["id"]]:
                return False
            if expand:  # the window, its overlaps once, the hit chunk between the markers
                index = ids.index(hit["id"])
                around = ids[max(index - 1, 0):index + 2]
                parts = hit["content"].split("\n[CHUNK BOUNDARY]\n")
                joined = "".join(parts)
                if hit["neighbors"] != [c for c in around if c != hit["id"]] or \
                        parts[1 if index else 0] != text[hit["id"]] or joined not in ref.text or \
                        not joined.startswith(text[around[0]]) or not joined.endswith(text[around[-1]]):
                    return False
        return True


# ------------------------------------------------------------------------------------- scenarios

@dataclass(frozen=True)
class Outcome:
    backend: str
    kind: str
    point: str
    exit_code: int
    seconds: float
    phases: dict[str, float]
    reads: dict[str, int]  # reads during and after the recovery, by what they showed
    embedded_after_restart: int  # texts the restarted server embedded for the ingest
    search_misses: list[str]  # exact chunk probes through MCP that did not find their chunk first
    unreachable: dict[str, list[str]]  # stored vectors a query with their own embedding does not find


class Scenarios:
    """Runs the selected kill scenarios on a small pool, after the reference ingests."""

    def __init__(self, fake: QuickFakeOpenAIServer, root: Path, selected: list[tuple[str, str, str]],
                 postgres_url: str | None, postgres_error: str = "not requested") -> None:
        self.fake, self.root, self.postgres_url, self.postgres_error = fake, root, postgres_url, postgres_error
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="crash-scenario")
        self.references = {name: self.pool.submit(make_reference, root / "reference", name, text)
                           for name, text in (("v1", V1), ("v2", V2))}
        if any(b == "postgresql" and k == "replace" for b, k, _ in selected):
            self.references["v1-postgresql"] = self.pool.submit(self._postgres_prior)
        self._cloning = threading.Lock()
        ordered = sorted(selected, key=lambda key: key not in REAL_LEASE)  # the longest first
        self.futures: dict[tuple[str, str, str], Future[Outcome]] = {
            key: self.pool.submit(self.run, *key) for key in ordered}

    def reference(self, name: str) -> Reference:
        return self.references[name].result()

    def outcome(self, backend: str, kind: str, point: str) -> Outcome:
        if (backend, kind, point) not in self.futures:
            self.futures[(backend, kind, point)] = self.pool.submit(self.run, backend, kind, point)
        return self.futures[(backend, kind, point)].result()

    def _postgres_prior(self) -> Reference:
        """V1 ingested completely into a PostgreSQL database: the template of every replacement there."""
        from tests.support.postgres import fresh_database

        assert self.postgres_url is not None
        prior = make_reference(self.root / "reference", "v1-postgresql", V1, fresh_database(self.postgres_url))
        check_complete(snapshot(prior.data_dir, prior.database_url), self.reference("v1"))  # as on SQLite
        return prior

    def _database(self, kind: str) -> str:
        from tests.support.postgres import fresh_database

        assert self.postgres_url is not None, f"PostgreSQL scenarios need a PostgreSQL server: {self.postgres_error}"
        if kind == "first":
            return fresh_database(self.postgres_url)
        template = self.reference("v1-postgresql").database_url
        assert template is not None
        with self._cloning:  # a template database takes one copy at a time
            return clone_database(template)

    def run(self, backend: str, kind: str, point: str) -> Outcome:
        started = mark = time.monotonic()
        phases: dict[str, float] = {}

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = round(now - mark, 2)
            mark = now

        v1, v2 = self.reference("v1"), self.reference("v2")
        target, prior = (v1, None) if kind == "first" else (v2, v1)
        work = self.root / f"{backend}-{kind}-{point}"
        data = work / "data"
        url = self._database(kind) if backend == "postgresql" else None
        if prior is not None:  # v1 ingested completely by a server that then stopped
            shutil.copytree(self.reference("v1-postgresql").data_dir / "chroma" if url else prior.data_dir,
                            data / "chroma" if url else data)
        status = "ingested" if prior is None else "replaced"

        # 1. Ingest, killed at the checkpoint: the call fails because the process died of SIGKILL.
        server = RawStdioServer(data, base_env(self.fake, url, MEMTROVE_CRASH_AT=point), work / "crashed.log")
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
        at_kill = snapshot(copy, url)
        state_at_kill(at_kill, point, target, prior)
        shutil.rmtree(copy)
        if url and (backend, kind, point) not in REAL_LEASE:
            expire_leases(url)  # as if the restart came a lease's length (60 s) later
        lease_until = max((job["lease_until"] for job in at_kill.sql.jobs), default=0.0)
        lap("at_kill")

        # 3. Restart without the fault: it finishes the job by itself; reads never show a partial artifact.
        probes = [(ref.chunk_ids[i], ref.chunk_text[ref.chunk_ids[i]])
                  for ref, i in ((v1, 0), (v1, len(v1.chunk_ids) // 3), (v1, -1), (v2, -1))]
        done = at_kill.sql.jobs[0]["done"] if at_kill.sql.jobs else len(target.chunk_ids)
        misses: list[str | None] = []
        recovered = work / "recovered"
        with QuickFakeOpenAIServer(default_dimensions=DIMS, document_delay=DOCUMENT_DELAY) as embedder:
            server = RawStdioServer(data, base_env(embedder, url), work / "restarted.log")
            with server:
                watch = Watch(server, target, prior, done)
                # Polled while the job goes on: the probes only one version holds first.
                polled = [probes[2], probes[3], probes[1], probes[0]]
                watch.get()  # the first call, before anything waits for the store
                watch.search("hybrid_search", polled[0])  # a client's first search races the resumed job
                watch.search("artifact_search", polled[1])
                # The client retries the call that died: the job is under way, or done.
                retry = server.call("artifact_ingest", ingest_args(target.text))
                if retry.is_error and retry.text.endswith("is being ingested; retry in a moment"):
                    # The job committed between the call's two reads (IngestArtifact._under_way): asked to retry.
                    time.sleep(0.5)
                    retry = server.call("artifact_ingest", ingest_args(target.text))
                assert not retry.is_error, retry.text
                answer = retry.structured or {}
                assert answer.get("status") in ("indexing", "unchanged", status), retry.text[:300]
                assert answer.get("artifact_id") == target.art_id
                if answer["status"] == "indexing":
                    assert (answer.get("version"), answer.get("chunks_total")) == (target.version, len(target.chunk_ids))
                patient = (backend, kind, point) in REAL_LEASE
                deadline = time.monotonic() + (150 if patient else 120)
                rounds = 0
                while not watch.get():
                    assert time.monotonic() < deadline, f"the ingest was not finished: {dict(watch.reads)}\n" \
                                                        f"{server.stderr()[-2000:]}"
                    given_up = [line for line in server.stderr().splitlines()
                                if "ingest_resume_crashed" in line or "ingest_resume_failed" in line]
                    assert not given_up, f"the restarted server gave the job up: {given_up}"
                    watch.search("hybrid_search", polled[rounds % len(polled)])
                    watch.search("artifact_search", polled[(rounds + 1) % len(polled)])
                    rounds += 1
                    time.sleep(1.0 if patient else 0.1)
                lap("recovered")
                for probe in probes:
                    misses.append(watch.search("hybrid_search", probe))
                for probe in probes[2:]:
                    misses.append(watch.search("artifact_search", probe))
                watch.search("hybrid_search", probes[1], expand=True)
                watch.search("hybrid_search", probes[3], limit=10)  # widens until it has read every vector
                wait_until_drained(url or sqlite_url(data))  # the outbox replayed into Chroma
                # The stores as the live server left them (a kill now would leave exactly this).
                with server.frozen():
                    recovered_sql = read_sql(url) if url else None
                    shutil.copytree(data, recovered)
                lap("searched")

                # 4. Re-ingesting the same content changes nothing.
                again = server.call("artifact_ingest", ingest_args(target.text))
                assert not again.is_error and (again.structured or {}).get("status") == "unchanged", again.text[:300]
            assert server.process.returncode == 0, server.stderr()[-2000:]
            embedded = Counter(embedder.inputs())
        stored = len(target.stored_by(point))
        queried = Counter(watch.queries)
        # A replacement takes the vectors of the pieces the committed version already had (same text, same
        # model) from the store's copy: only the rest is embedded again.
        owed = Counter(t for t in target.inputs[stored:] if prior is None or t not in set(prior.inputs))
        assert embedded - queried == owed and not queried - embedded, (
            f"the restarted server embedded {sum((embedded - queried).values())} texts for the ingest; "
            f"{len(target.inputs) - stored} pieces were not stored yet, {sum(owed.values())} of them new texts")
        if patient:  # a live lease is nobody else's to take: no progress until it ran out
            early = [p for asked, p in watch.stalled if asked < lease_until - 1.0]
            assert early and set(early) == {done}, f"progress before the dead worker's lease ran out: {early}"
        lap("restarted")

        expected_audit = audit_trail(prior.sql, prior.art_id) if prior else []
        expected_audit += [(status, target.version)]
        now = StoreSnapshot(recovered_sql or read_sql(sqlite_url(recovered)), read_chroma(recovered))
        final = snapshot(data, url)  # after the clean stop
        for name, state in (("recovered", now), ("after a clean stop", final)):
            try:
                check_complete(state, target)
                assert audit_trail(state.sql, target.art_id) == expected_audit, "the audit trail"
                kept = {n: i for n, i in state.chroma.collections.items() if n in at_kill.chroma.collections}
                assert kept == at_kill.chroma.collections, "a Chroma collection was rebuilt (its id changed)"
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}") from exc
        assert final.chroma.collections == now.chroma.collections
        unreachable = {"recovered": unreachable_vectors(recovered)["chunk"],
                       "after a clean stop": unreachable_vectors(data)["chunk"]}
        lap("checked")
        shutil.rmtree(work)
        outcome = Outcome(backend, kind, point, exit_code, round(time.monotonic() - started, 1), phases,
                          dict(watch.reads), sum((embedded - queried).values()), [m for m in misses if m],
                          unreachable)
        print(f"crash scenario {outcome}", flush=True)
        return outcome


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


@pytest.fixture(scope="module")
def scenarios(fake: QuickFakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory,
              request: pytest.FixtureRequest) -> Iterator[Scenarios]:
    selected: list[tuple[str, str, str]] = []
    for item in request.session.items:
        if getattr(item, "module", None) is not request.module:
            continue
        if item.originalname in TESTS:
            selected.append((*TESTS[item.originalname], item.callspec.params["point"]))
        elif item.originalname == "test_postgres_killed_at":
            selected.append(("postgresql", item.callspec.params["kind"], item.callspec.params["point"]))
    postgres, error = None, "not requested"
    if any(backend == "postgresql" for backend, *_ in selected):
        try:
            postgres = request.getfixturevalue("postgres_url")
        except Exception as exc:  # noqa: BLE001 - the PostgreSQL scenarios fail with it; the others run
            selected, error = [key for key in selected if key[0] != "postgresql"], str(exc)
    runner = Scenarios(fake, tmp_path_factory.mktemp("crash"), selected, postgres, error)
    try:
        yield runner
    finally:
        runner.pool.shutdown(wait=True, cancel_futures=True)


# ----------------------------------------------------------------------------------------- tests

def test_reference_ingests(scenarios: Scenarios) -> None:
    """The uninterrupted ingests every scenario converges to; their sizes give the checkpoints."""
    v1, v2 = scenarios.reference("v1"), scenarios.reference("v2")
    assert v1.art_id == v2.art_id and v1.version != v2.version
    for ref in (v1, v2):
        assert len(ref.chunk_ids) >= 1000 and len(ref.batches) == BATCHES, (
            f"{len(ref.chunk_ids)} chunks / {len(ref.vector_order)} vectors no longer make {BATCHES} batches")
        assert all(len(batch) <= EMBED_BATCH for batch in ref.batches)
        assert len(ref.vector_order) == len(ref.chunk_ids), "one piece per chunk: a batch's records are its vectors"
    shared = set(v1.chunk_ids) & set(v2.chunk_ids)
    assert len(shared) > 500, "the versions should share chunk ids (same index, same content)"
    assert len(set(v1.chunk_text.values())) == len(v1.chunk_ids), "chunks should all differ"


def test_an_embedding_failure_part_way_writes_nothing(scenarios: Scenarios, tmp_path: Path) -> None:
    """The second stored batch fails to embed (the first is stored pending by then): no version, no job,
    no vector, no lexical entry, no outbox item remain, and the error says how much was left."""
    first_batch = len({record_of(vid) for vid in scenarios.reference("v1").batches[0]})
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as fake:
        server = RawStdioServer(tmp_path / "data", base_env(fake, OPENAI_MAX_RETRIES="1"), tmp_path / "stderr.log")
        with server:
            warm = server.call("hybrid_search", {"query": "warm up"})  # the client is built
            assert not warm.is_error, warm.text
            before = len(fake.requests)
            fake.fail_on(before + 3, 500)  # the first batch embeds in two requests, the second fails
            failed = server.call("artifact_ingest", ingest_args(V1))
            assert failed.is_error
            assert failed.text.startswith("Failed to ingest artifact: embedding generation failed for "), failed.text
            assert "No data was written" in failed.text, failed.text
            left = re.match(r"Failed to ingest artifact: embedding generation failed for (\d+) chunks?\.", failed.text)
            assert left and int(left.group(1)) == 1121 - first_batch, failed.text
            assert len(fake.requests) == before + 3, "the ingest went on embedding after a failure"
            searched = server.call("hybrid_search", {"query": V1[:200], "limit": 50})
            assert not searched.is_error and searched.structured["count"] == 0
        assert server.process.returncode == 0, server.stderr()
        snap = snapshot(tmp_path / "data")
    sql = snap.sql
    assert sql.artifact_rows == [] and sql.chunk_rows == [], "rows were written for a failed ingest"
    assert sql.jobs == [] and sql.vectors == {} and sql.outbox == [] and sql.lexical == set(), (
        f"a failed ingest left {len(sql.jobs)} jobs, {len(sql.vectors)} vectors, {len(sql.outbox)} outbox items, "
        f"{len(sql.lexical)} lexical entries")
    assert not any(snap.chroma.vectors.values()), "vectors were written for a failed ingest"
    mentioned = [(r["action"], r["item_ids"]) for r in sql.audit_rows if "art_" in r["item_ids"]]
    assert mentioned == [], f"the audit log records an ingest that wrote nothing: {mentioned}"


def test_an_ingest_under_way_survives_a_kill_while_its_chunks_are_cut(fake: QuickFakeOpenAIServer,
                                                                      tmp_path: Path) -> None:
    """Once an ingest is known as under way (artifact_get says "indexing", as a call past its budget
    does), the work survives a restart (issue 9, part 4): killed (-9) while the artifact is still
    being cut into chunks, before its pending version exists, it is finished by the next server, and
    artifact_get never answers "not found" for it. A document ~7 times V1's takes seconds to cut.
    """
    text = document(9, 8000)
    data = tmp_path / "data"
    art_id = artifact_id(SOURCE["source_system"], SOURCE["source_id"], "")  # by its source
    server = RawStdioServer(data, base_env(fake), tmp_path / "first.log")
    with server:
        server.send("tools/call", {"name": "artifact_ingest", "arguments": ingest_args(text)})
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "the ingest was never shown as being cut"
            got = server.call("artifact_get", {"artifact_id": art_id})
            body = got.structured or {}
            if not got.is_error and body.get("status") == "indexing" and body.get("chunks_total") == 0:
                server.process.kill()  # while it is being cut into chunks
                break
            assert got.is_error or body.get("status") == "indexing", got.text[:300]
            time.sleep(0.02)
    at_kill = read_sql(sqlite_url(data))
    stage = "after its pending version was written" if at_kill.artifact_rows else "while it was being cut"
    assert at_kill.jobs and at_kill.jobs[0]["artifact_id"] == art_id, f"no job at the kill ({stage}): {at_kill.jobs}"

    server = RawStdioServer(data, base_env(fake), tmp_path / "restarted.log")
    with server:
        deadline = time.monotonic() + 180
        while True:
            got = server.call("artifact_get", {"artifact_id": art_id, "include_content": True})
            assert not got.is_error, f"an ingest shown as under way was lost, killed {stage}: {got.text[:300]}"
            body = got.structured or {}
            if body.get("status") == "indexed":
                break
            assert body.get("status") == "indexing" and time.monotonic() < deadline, body
            time.sleep(0.2)
        assert body["content"] == text
        found = server.call("hybrid_search", {"query": text[:200]})
        assert not found.is_error and found.structured["results"][0]["artifact_id"] == art_id
        wait_until_drained(sqlite_url(data))
    assert server.process.returncode == 0, server.stderr()[-2000:]
    snap = snapshot(data)
    assert [r["status"] for r in snap.sql.artifact_rows] == ["committed"] and not snap.sql.jobs
    assert not snap.sql.outbox and all(not row.pending for row in snap.sql.vectors.values())
    assert set(snap.chroma.vectors["chunk"]) == {vid for (col, vid) in snap.sql.vectors if col == "chunk"}


def test_reads_at_every_checkpoint_of_a_replacement_see_one_complete_version(
        fake: QuickFakeOpenAIServer, tmp_path: Path) -> None:
    """In-process, real SQLite + Chroma: at each checkpoint of replacing V1 by V2, get and search see
    exactly V1 (before the commit, with V2's job and its progress) or exactly V2 (from the commit on),
    never a mix, never a gap. The checkpoints met are exactly the kill points of the process tests.

    V1 and V2 share ~570 chunks (same index and content, so the same chunk id); probing with a
    chunk's exact text must return that very chunk of the visible version.
    """
    from config.settings import Settings
    from domain.artifacts.input import IngestRequest
    from domain.search.usecases import SearchRequest
    from entrypoints.runtime import Runtime

    settings = Settings(memtrove_data_dir=tmp_path / "data", memtrove_embedder="openai-compatible",
                        openai_base_url=fake.base_url, openai_embed_model="fake", openai_embed_dims=DIMS,
                        chunk_target_tokens=40, chunk_overlap_tokens=8, single_piece_max_tokens=40,
                        memtrove_warmup=False, memtrove_crash_at=None, memtrove_shared=False)
    observed: list[tuple[str, str, str, str, Any]] = []  # (point, tool, probe id, probe text, result)
    request = IngestRequest("doc", SOURCE["source_system"], V1, SOURCE["source_id"])
    with chroma_exclusive():
        runtime = Runtime(settings)
        try:
            runtime.start()
            runtime.ensure_ready()
            uc = runtime.app.use_cases
            first = uc.ingest_artifact()(request)
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

            ingest = replace(uc.ingest_artifact(), checkpoint=observe)
            second = ingest(replace(request, content=V2))
            assert second.status == "replaced" and second.artifact.id == art_id
        finally:
            runtime.shutdown()
    v2_chunks = {c.id: c.content for c in second.chunks}
    points = list(dict.fromkeys(point for point, *_ in observed))
    assert points == POINTS_FIRST, f"the write path's checkpoints are {points}; the kill points must match"

    problems: list[str] = []
    progress = -1
    for point, tool, probe_id, text, result in observed:
        chunks, content = (v2_chunks, V2) if point == "committed" else (v1_chunks, V1)
        version = "V2" if point == "committed" else "V1"
        if tool == "artifact_get":
            if result.content != content or [c.id for c in result.chunks] != list(chunks):
                problems.append(f"{point}: artifact_get is not exactly {version}")
            job = result.job
            if point == "committed" and job is not None:
                problems.append(f"{point}: artifact_get shows a job after the commit: {job}")
            if point != "committed" and (job is None or job.version != second.artifact.version or job.done < progress):
                problems.append(f"{point}: artifact_get does not show V2's job going forward: {job}")
            progress = job.done if job is not None else progress
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


@pytest.mark.parametrize("point", POINTS_FIRST)
def test_first_ingest_killed_at(point: str, scenarios: Scenarios) -> None:
    assert scenarios.outcome("sqlite", "first", point).exit_code == -9


@pytest.mark.parametrize("point", POINTS_REPLACE)
def test_replacement_killed_at(point: str, scenarios: Scenarios) -> None:
    assert scenarios.outcome("sqlite", "replace", point).exit_code == -9


@pytest.mark.parametrize(("kind", "point"), POINTS_POSTGRES)
def test_postgres_killed_at(kind: str, point: str, scenarios: Scenarios) -> None:
    """The same on PostgreSQL (a database per scenario); the restarted server is not the store's only user,
    so it takes over a dead worker's job once its lease ran out, and not before."""
    assert scenarios.outcome("postgresql", kind, point).exit_code == -9


def test_search_reaches_every_vector_after_recovery(scenarios: Scenarios) -> None:
    """After a crash and its recovery, every stored chunk vector is findable by search.

    Each vector is queried with its own embedding (all are distinct, so it must come first). The
    uninterrupted reference ingests are the control. Rows and vectors may agree exactly (the
    scenario tests) while the index still cannot reach some vectors: those chunks are then stored
    but can never be found by artifact_search / hybrid_search. Chroma 1.5.9 does that after deletes
    (chroma-core/chroma#7758); a replacement's outbox replay deletes the old version's vectors.
    """
    control = {name: scenarios.reference(name).unreachable for name in ("v1", "v2")}
    found: list[str] = []
    for (backend, kind, point), future in scenarios.futures.items():
        if future.exception() is not None:
            continue  # that scenario's own test reports it
        outcome = future.result()
        for stage, ids in outcome.unreachable.items():
            if ids:
                found.append(f"{backend} {kind} ingest killed at {point}, {stage}: {len(ids)} unreachable, e.g. "
                             f"{', '.join(short(i) for i in ids[:3])}")
        found += [f"{backend} {kind} ingest killed at {point}: {miss}" for miss in outcome.search_misses]
    assert not any(control.values()), f"vectors unreachable even without a crash: {control}"
    assert not found, (
        f"{len(found)} findings of stored chunk vectors that search cannot reach after crash recovery "
        f"(none in the uninterrupted control ingests):\n" + "\n".join(found[:30]))


def test_kill_points_cover_the_write_path(scenarios: Scenarios) -> None:
    """Every checkpoint of the write path (test_reads_at_every_checkpoint... checks the list), each really killed (-9) and checked."""
    if set(POINTS_FIRST) - {p for (b, k, p) in scenarios.futures if (b, k) == ("sqlite", "first")}:
        pytest.skip("only part of the kill points was selected")
    assert len(set(POINTS_FIRST)) == len(POINTS_FIRST) == BATCHES + 2
    killed = {point for (backend, kind, point), future in scenarios.futures.items()
              if (backend, kind) == ("sqlite", "first") and future.exception() is None
              and future.result().exit_code == -9}
    assert killed >= set(POINTS_FIRST), f"kill points not verified: {sorted(set(POINTS_FIRST) - killed)}"
