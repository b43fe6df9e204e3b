"""How fast documents become searchable with the local model (issue 29): Python's library documents
(the passages bench's corpus, reST from Debian's python3-doc) through ``artifact_ingest`` over MCP
stdio, on a fresh server of the embedded default with MEMTROVE_LOCAL_MODEL's model.

Reported: seconds per MB of text; the model's pieces (vectors stored) a second; chunks; each call's
p50/p95; for each document, when it was first found by its words (a words-only ``hybrid_search`` for
a sentence of its own, asked every 0.25 s while its call runs) and by meaning (its call answered
"ingested", or artifact_get "indexed" after a call whose budget ran out), from its call's start: the
sums over the corpus per MB and the medians; the server's CPU over the wall time (2.0 = both cores all the time) and
each core's busy share (/proc/stat, the whole machine: run it on a quiet one); the server's peak RSS.
``--before DIR`` runs the same ingest on another checkout too, alternately, in one run; ``--reingest``
then ingests each document again with one paragraph added near its middle (a new version).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import call, latency, peak_mb, server, server_process
from bench.passages import DOCS, load_questions
from domain.chunking import content_hash
from domain.ids import artifact_id

QUESTIONS = Path(__file__).parent / "data" / "python_docs_questions.json"


def corpus(limit: int | None) -> list[tuple[str, str]]:
    names, _ = load_questions(QUESTIONS)
    return [(name, (DOCS / name).read_text(encoding="utf-8")) for name in names[:limit]]


def core_ticks() -> list[tuple[int, int]]:
    """(busy, total) jiffies of each core."""
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            ticks = [int(x) for x in line.split()[1:]]
            idle = ticks[3] + ticks[4]
            out.append((sum(ticks) - idle, sum(ticks)))
    return out


def probe(text: str) -> str:
    """A sentence of the document's own from near its middle (words only: no markup), to find it by."""
    lines = [" ".join(w for w in line.split() if w.isalpha()) for line in text.splitlines()]
    usable = [line for line in lines if len(line.split()) >= 8]
    return " ".join(usable[len(usable) // 2].split()[:12]) if usable else text[:200]


async def watched(client: Any, name: str, text: str) -> dict[str, Any]:
    """Ingest one document; seconds until its words find it and until its vectors are in (from its call's start)."""
    art = artifact_id("python-docs", name, content_hash(text))
    started = time.perf_counter()
    seen: dict[str, float] = {}

    async def words() -> None:
        while "meaning" not in seen:
            hits = await call(client, "hybrid_search", query=probe(text), mode="lexical", limit=10,
                              filters={"source_system": "python-docs"})
            if any(h.get("artifact_id") == art for h in hits.get("results", [])):
                seen.setdefault("words", time.perf_counter() - started)
                return
            await anyio.sleep(0.25)

    async with anyio.create_task_group() as group:
        group.start_soon(words)
        got = await call(client, "artifact_ingest", artifact_type="doc", source_system="python-docs",
                         source_id=name, title=name, content=text)
        answered = time.perf_counter() - started
        while got.get("status") == "indexing":  # the call's budget ran out: it goes on in the background
            await anyio.sleep(0.25)
            got = await call(client, "artifact_get", artifact_id=art)
            got = {**got, **got.get("metadata", {})}
        seen["meaning"] = time.perf_counter() - started
    seen.setdefault("words", seen["meaning"])  # found by words no earlier than by meaning
    return {"call": answered, "chunks": got.get("num_chunks") or 1, **seen}


def edited(text: str) -> str:
    """The document with one paragraph near its middle reworded: a new version, most chunks unchanged."""
    middle = text.find("\n\n", len(text) // 2)
    return text if middle < 0 else f"{text[:middle]}\n\nThis paragraph was added by an edit.{text[middle:]}"


async def ingest(docs: list[tuple[str, str]], folder: Path, concurrency: int, again: bool = False) -> dict[str, Any]:
    first = await _ingest(docs, folder, concurrency)
    if not again:
        return first
    second = await _ingest([(name, edited(text)) for name, text in docs], folder, concurrency)
    return {**first, "reingest_edited": {k: second[k] for k in ("wall_seconds", "seconds_per_mb", "call_seconds")}}


async def _ingest(docs: list[tuple[str, str]], folder: Path, concurrency: int) -> dict[str, Any]:
    seconds: list[float] = []
    words: list[float] = []
    meaning: list[float] = []
    chunks = 0
    async with server(folder) as client:
        process = server_process()
        await call(client, "memory_search", query="warm the model up")
        cpu_before, ticks_before = process.cpu_times(), core_ticks()
        started = time.perf_counter()
        pending = list(docs)

        async def worker() -> None:
            nonlocal chunks
            while pending:
                name, text = pending.pop(0)
                got = await watched(client, name, text)
                seconds.append(got["call"])
                words.append(got["words"])
                meaning.append(got["meaning"])
                chunks += got["chunks"]

        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(worker)
        wall = time.perf_counter() - started
        cpu_after, ticks_after = process.cpu_times(), core_ticks()
        peak = peak_mb(process)
    megabytes = sum(len(text.encode("utf-8")) for _, text in docs) / 1e6
    with sqlite3.connect(folder / "memtrove.sqlite3") as db:
        pieces = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    cpu = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    busy = [round((b1 - b0) / max(t1 - t0, 1), 2) for (b0, t0), (b1, t1) in zip(ticks_before, ticks_after)]
    return {"documents": len(docs), "megabytes": round(megabytes, 3), "chunks": chunks, "pieces": pieces,
            "wall_seconds": round(wall, 1), "seconds_per_mb": round(wall / megabytes, 1),
            "pieces_per_second": round(pieces / wall, 2), "server_cpu_per_wall": round(cpu / wall, 2),
            "core_busy": busy, "call_seconds": latency(seconds), "peak_rss_mb": peak,
            "words_seconds": latency(words), "meaning_seconds": latency(meaning),
            "words_seconds_per_mb": round(sum(words) / megabytes, 1),
            "meaning_seconds_per_mb": round(sum(meaning) / megabytes, 1)}


def main(limit: int | None, concurrency: int, before: Path | None, rounds: int, out: Path | None,
         again: bool = False) -> int:
    docs = corpus(limit)
    trees = {"after": Path(__file__).resolve().parents[1], **({"before": before.resolve()} if before else {})}
    report: dict[str, Any] = {"model": os.environ.get("MEMTROVE_LOCAL_MODEL", "minilm"), "runs": []}
    for number in range(rounds):
        for name, tree in trees.items():
            os.environ["PYTHONPATH"] = str(tree)  # the server's code; this process keeps its own
            with tempfile.TemporaryDirectory(prefix="memtrove-ingest-") as scratch:
                row = {"tree": name, "round": number, **anyio.run(ingest, docs, Path(scratch), concurrency, again)}
            print(json.dumps(row), flush=True)
            report["runs"].append(row)
            if out:
                out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(None, 2, None, 1, None))
