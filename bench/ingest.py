"""How fast documents become searchable with the local model (issue 29): Python's library documents
(the passages bench's corpus, reST from Debian's python3-doc) through ``artifact_ingest`` over MCP
stdio, on a fresh server of the embedded default with MEMTROVE_LOCAL_MODEL's model.

Reported: seconds per MB of text; the model's pieces (vectors stored) a second; chunks; each call's
p50/p95 (a document is searchable by words and by meaning when its call returns: its text and its
vectors commit together); the server's CPU over the wall time (2.0 = both cores all the time) and
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
                t = time.perf_counter()
                got = await call(client, "artifact_ingest", artifact_type="doc", source_system="python-docs",
                                 source_id=name, title=name, content=text)
                seconds.append(time.perf_counter() - t)
                chunks += got.get("num_chunks") or 1

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
            "core_busy": busy, "call_seconds": latency(seconds), "peak_rss_mb": peak}


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
