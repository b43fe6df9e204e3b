"""How search holds as the store grows: a store built over MCP to each size asked, measured at each.

The server is ``memtrove serve`` on the embedded default (SQLite + embedded Chroma; with CHROMA_HOST and
CHROMA_PORT set, that Chroma server instead, whose disk is not counted) with a stand-in
OpenAI-compatible embedding service (bench.standin: bag-of-words vectors), so the figures are the
storage and search path, not a model. Text: bench.scale_corpus, chunks of 300 tokens. At each size:
  - ingest rate (chunks/s over MCP, the server's CPU per chunk) and the time it took;
  - hybrid_search over MCP: p50/p95 of the client's wait, the server's CPU per search (its whole
    process, over every query, /proc's counters);
  - the raw index work underneath, in this process after the server stopped, on the same files:
    one Chroma query (60 nearest), one FTS5 BM25 query (60 best, over the words the server's match
    budget keeps) and the exact-token lookup of the query's tokens, CPU and wall per query;
  - disk (every file of the data folder) beyond the text stored (the chunks' text, counted in the
    store), the server's RSS and peak RSS.
A store is grown in steps: ``--chunks 10000 --chunks 100000`` measures at 10k, then adds to 100k.
``--store`` keeps it (with scale-state.json) so a later run grows it further.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil

from bench.common import call, latency, peak_mb, server, server_process
from bench.scale_corpus import DOCS, Document, copies, originals, queries
from bench.standin import BagOfWords, StandinEmbeddings

WARMUP = 5


def main(steps: list[int], store: Path | None, out: Path, dims: int, count: int, concurrency: int,
         docs: Path = DOCS, locomo: Path | None = Path("../shared/locomo")) -> int:
    locomo = locomo if locomo and locomo.is_dir() else None
    documents = originals(docs, locomo)
    asked = queries(documents, locomo, count)
    with tempfile.TemporaryDirectory(prefix="memtrove-scale-") as scratch:
        folder = store or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        report = anyio.run(_grow_and_measure, folder, documents, asked, sorted(steps), dims, concurrency, out)
    for row in report["sizes"]:
        print(json.dumps(row))
    return 0


def _state(folder: Path) -> dict[str, Any]:
    path = folder / "scale-state.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"position": 0, "chunks": 0, "artifacts": 0, "text_bytes": 0, "build_seconds": 0.0}


async def _grow_and_measure(folder: Path, documents: list[Document], asked: list[str], steps: list[int],
                            dims: int, concurrency: int, out: Path) -> dict[str, Any]:
    """Each size's row, written to ``out`` as soon as it is measured (a long run keeps what it did)."""
    state = _state(folder)
    sizes: list[dict[str, Any]] = []
    with StandinEmbeddings(dims) as embeddings:
        env = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": embeddings.url,
               "OPENAI_API_KEY": "standin", "OPENAI_EMBED_MODEL": f"standin-bow-{dims}",
               "OPENAI_EMBED_DIMS": str(dims), "CHUNK_TARGET_TOKENS": "300", "MEMTROVE_WARMUP": "false",
               **{k: os.environ[k] for k in ("CHROMA_HOST", "CHROMA_PORT") if os.environ.get(k)}}
        for target in steps:
            async with server(folder, env) as client:
                process = server_process()
                grown = await _grow(client, process, documents, state, target, concurrency, folder)
                row = {"chunks": state["chunks"], "artifacts": state["artifacts"], **grown,
                       **await _searches(client, process, asked)}
                row.update(rss_mb=round(process.memory_info().rss / 2**20, 1), peak_rss_mb=peak_mb(process))
            disk = sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())
            stored, text_bytes = _stored(folder)
            row.update(stored_chunks=stored, disk_mb=round(disk / 2**20, 1), text_mb=round(text_bytes / 2**20, 1),
                       disk_kb_per_chunk_beyond_text=round((disk - text_bytes) / 1024 / stored, 2),
                       build_seconds=round(state["build_seconds"], 1),
                       raw=_raw_reference(folder, asked, BagOfWords(dims)))
            row["cpu_ratio_to_raw"] = round(row["server_cpu_ms_per_search"] / row["raw"]["cpu_ms_per_query"], 2)
            sizes.append(row)
            report = {"dimensions": dims, "queries": len(asked), "concurrency": concurrency, "sizes": sizes}
            out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _stored(folder: Path) -> tuple[int, int]:
    """Chunks the store holds (an artifact stored whole counts as one) and the bytes of their text."""
    db = sqlite3.connect(f"file:{folder / 'memtrove.sqlite3'}?mode=ro", uri=True)
    try:
        chunks, chunk_bytes = db.execute(
            "SELECT count(*), coalesce(sum(length(CAST(c.content AS BLOB))), 0) FROM artifact_chunks c "
            "CROSS JOIN artifacts a ON a.artifact_id = c.artifact_id AND a.version = c.version "
            "WHERE a.status = 'committed'").fetchone()
        whole, whole_bytes = db.execute(
            "SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0) FROM artifacts "
            "WHERE status = 'committed' AND NOT is_chunked").fetchone()
    finally:
        db.close()
    return chunks + whole, chunk_bytes + whole_bytes


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


async def _grow(client: Any, process: psutil.Process, documents: list[Document], state: dict[str, Any],
                target: int, concurrency: int, folder: Path) -> dict[str, Any]:
    """Ingest artifacts (``concurrency`` calls at a time) until the store holds ``target`` chunks."""
    before, cpu0, started = state["chunks"], _cpu(process), time.perf_counter()
    source = copies(documents, state["position"])
    lock = anyio.Lock()

    async def worker() -> None:
        while state["chunks"] < target:
            async with lock:
                position, doc = next(source)
                state["position"] = position + 1
            got = await call(client, "artifact_ingest", artifact_type=doc.artifact_type, source_system="bench",
                             content=doc.text, source_id=doc.name, title=doc.name[:500], chunker="auto")
            state["chunks"] += got["num_chunks"] if got.get("is_chunked") else 1
            state["artifacts"] += 1
            state["text_bytes"] += len(doc.text.encode("utf-8"))

    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    await call(client, "embedding_health")  # every vector written is in the index before anything is measured
    seconds = time.perf_counter() - started
    state["build_seconds"] += seconds
    (folder / "scale-state.json").write_text(json.dumps(state), encoding="utf-8")
    added = state["chunks"] - before
    return {"ingested_chunks": added, "ingest_seconds": round(seconds, 1),
            "ingest_chunks_per_s": round(added / seconds, 1) if seconds and added else None,
            "server_cpu_ms_per_chunk": round((_cpu(process) - cpu0) * 1000 / added, 3) if added else None}


async def _searches(client: Any, process: psutil.Process, asked: list[str]) -> dict[str, Any]:
    for query in asked[:WARMUP]:
        await call(client, "hybrid_search", query=query, limit=10)
    waits: list[float] = []
    cpu0 = _cpu(process)
    for query in asked:
        started = time.perf_counter()
        await call(client, "hybrid_search", query=query, limit=10)
        waits.append((time.perf_counter() - started) * 1000)
    spent = (_cpu(process) - cpu0) * 1000
    return {"hybrid_ms": latency(waits), "server_cpu_ms_per_search": round(spent / len(asked), 2)}


def _raw_reference(folder: Path, asked: list[str], model: BagOfWords) -> dict[str, Any]:
    """The index work one search needs at least, timed per query (CPU of this process, and wall)."""
    import chromadb
    from chromadb.config import Settings

    from adapters.lexical.fts import MATCH_BUDGET
    from adapters.lexical.sqlite import _quoted
    from domain.search.lexical import analyse

    host = os.environ.get("CHROMA_HOST")  # a Chroma server (its disk is not counted), else the embedded one
    client = (chromadb.HttpClient(host=host, port=int(os.environ.get("CHROMA_PORT", "8001")),
                                  settings=Settings(anonymized_telemetry=False)) if host else
              chromadb.PersistentClient(path=str(folder / "chroma"), settings=Settings(anonymized_telemetry=False)))
    chunks = client.get_collection(next(c.name for c in client.list_collections() if c.name.startswith("chunk__")))
    db = sqlite3.connect(f"file:{folder / 'memtrove.sqlite3'}?mode=ro", uri=True)

    def count(query: str) -> int:
        return db.execute("SELECT count(*) FROM (SELECT rowid FROM fts_chunk WHERE fts_chunk MATCH ? LIMIT ?)",
                          (query, MATCH_BUDGET + 1)).fetchone()[0]

    def floor(query: str) -> int:  # where the newest MATCH_BUDGET matches start
        row = db.execute("SELECT rowid FROM fts_chunk WHERE fts_chunk MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                         (query, MATCH_BUDGET - 1)).fetchone()
        return row[0] if row else 0

    planned = []  # the queries as the server's budget shapes them, worked out before the clock starts
    for text in asked:
        terms = analyse(text)
        kept, spent = [], 0
        for word, n in sorted(((w, count(f"body : {_quoted(w)}")) for w in terms.words), key=lambda x: x[1]):
            if n and spent + n <= MATCH_BUDGET:
                kept.append(word)
                spent += n
        words = "body : (" + " OR ".join(_quoted(w) for w in (kept or terms.words)) + ")"
        exact = [t for t in terms.exact if len(t) >= 3]
        phrase = "body : (" + " OR ".join(_quoted(t) for t in exact) + ")" if exact else ""
        planned.append((model.embed(text), words, 0 if kept else floor(words), exact, phrase,
                        floor(phrase) if phrase else 0))

    def one(vector: list[float], words: str, words_floor: int, exact: list[str], phrase: str,
            phrase_floor: int) -> None:
        chunks.query(query_embeddings=[vector], n_results=60, include=["distances"])
        db.execute("SELECT rowid, bm25(fts_chunk, 1.0, 0.0) AS r FROM fts_chunk WHERE fts_chunk MATCH ? "
                   "AND rowid >= ? ORDER BY r LIMIT 60", (words, words_floor)).fetchall()
        if phrase:  # the token's words as a phrase, then the token itself in the chunk's text
            held = " OR ".join("instr(lower(ch.content), ?) > 0" for _ in exact)
            db.execute(f"SELECT f.rowid, bm25(fts_chunk, 1.0, 0.0) AS r FROM fts_chunk f "
                       f"JOIN lexical_docs d ON d.id = f.rowid JOIN artifact_chunks ch ON ch.artifact_id = d.owner "
                       f"AND ch.version = d.version AND ch.chunk_id = d.record_id WHERE fts_chunk MATCH ? "
                       f"AND f.rowid >= ? AND ({held}) ORDER BY r LIMIT 20",
                       (phrase, phrase_floor, *(t.lower() for t in exact))).fetchall()

    for plan in planned[:WARMUP]:
        one(*plan)
    cpu, wall = [], []
    for plan in planned:
        c0, w0 = time.process_time(), time.perf_counter()
        one(*plan)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    db.close()
    return {"cpu_ms_per_query": round(sum(cpu) / len(cpu), 2), "wall_ms": latency(wall)}
