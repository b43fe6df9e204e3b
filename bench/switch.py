"""A store's local model switched under load: how long it takes and whether searches keep being answered.

A store of ``--chunks`` chunks is built over MCP with the first model (Python's documentation,
bench.scale_corpus, two ``artifact_ingest`` calls at a time), then served with the second model
configured: the server re-embeds in the background (entrypoints/switch.py) while this client asks
``hybrid_search`` every ``--pace`` seconds (a busy agent's rate, not a flood that takes a core of
its own) and reads ``embedding_health``'s ``model_switch``
every few seconds, until the state is ``switched``. Reported: the build (chunks/s), the switch's
wall time and records a second, the searches answered during it (p50/p95, errors, which model
answered), and a search after it answered by the new model. ``--store`` keeps the built store: the
first model's build is copied aside (``<store>/built``) so a second run switches the same store again.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import call, latency, server, server_peak_rss_mb, store_dir, write_report
from bench.scale_corpus import DOCS, copies, originals, queries

POLL = 3.0  # seconds between two readings of the switch's progress


def main(chunks: int, before: str, after: str, store: Path | None, out: Path | None, docs: Path = DOCS,
         pace: float = 1.0) -> int:
    documents = originals(docs, None)
    asked = queries(documents, None, 200)
    with store_dir(store, "memtrove-switch-") as folder:
        built = folder / "built"
        if not (built / "bench-switch.json").exists():
            shutil.rmtree(built, ignore_errors=True)
            build = anyio.run(_build, built, documents, chunks, before)
            (built / "bench-switch.json").write_text(json.dumps(build), encoding="utf-8")
        build = json.loads((built / "bench-switch.json").read_text(encoding="utf-8"))
        work = folder / "switching"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(built, work)
        switched = anyio.run(_switch, work, asked, after, pace)
    report = {"protocol": "switch", "from": before, "to": after, "build": build, "switch": switched}
    write_report(report, table(report), out)
    return 0


async def _build(folder: Path, documents: list[Any], target: int, model: str) -> dict[str, Any]:
    state = {"chunks": 0, "artifacts": 0}
    source = copies(documents)
    started = time.perf_counter()
    async with server(folder, {"MEMTROVE_LOCAL_MODEL": model}) as client:

        async def worker() -> None:
            while state["chunks"] < target:
                _, doc = next(source)
                got = await call(client, "artifact_ingest", artifact_type="doc", source_system="bench",
                                 content=doc.text, source_id=doc.name, title=doc.name[:500])
                state["chunks"] += got["num_chunks"] if got.get("is_chunked") else 1
                state["artifacts"] += 1

        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(worker)
        await call(client, "embedding_health")
    seconds = time.perf_counter() - started
    return {**state, "model": model, "seconds": round(seconds, 1), "chunks_per_s": round(state["chunks"] / seconds, 1)}


async def _switch(folder: Path, asked: list[str], model: str, pace: float) -> dict[str, Any]:
    waits: list[float] = []
    errors: list[str] = []
    answered_by: dict[str, int] = {}
    started = time.perf_counter()
    async with server(folder, {"MEMTROVE_LOCAL_MODEL": model}) as client:
        first = (await call(client, "embedding_health")).get("model_switch") or {}
        status, last_poll, i = first, 0.0, 0
        while status.get("state") != "switched":
            if time.perf_counter() - last_poll >= POLL:
                status = (await call(client, "embedding_health")).get("model_switch") or {"state": "switched"}
                last_poll = time.perf_counter()
                print(f"{last_poll - started:7.1f} s  {status.get('state')} {status.get('done')}/{status.get('total')}"
                      f"  searches {len(waits)}", file=sys.stderr, flush=True)
                continue
            query = asked[i % len(asked)]
            i += 1
            await anyio.sleep(pace)
            t0 = time.perf_counter()
            got = await client.call_tool("hybrid_search", {"query": query, "limit": 10})
            waits.append((time.perf_counter() - t0) * 1000)
            if got.is_error:
                errors.append(" ".join(getattr(c, "text", "") for c in got.content)[:200])
                continue
            for hit in (got.structured_content or {}).get("results", [])[:1]:
                name = (hit.get("provenance") or {}).get("embedding_model", "?")
                answered_by[name] = answered_by.get(name, 0) + 1
        seconds = time.perf_counter() - started
        after = await call(client, "hybrid_search", query=asked[0], limit=3, mode="vector")
        peak = server_peak_rss_mb()
    return {"started_as": {k: first.get(k) for k in ("from", "to", "state", "done", "total")},
            "seconds": round(seconds, 1), "records": first.get("total"),
            "records_per_s": round((first.get("total") or 0) / seconds, 1) if seconds else None,
            "rounds": status.get("rounds"), "search_every_s": pace, "searches": latency(waits), "search_errors": len(errors),
            "errors": errors[:5], "first_hit_embedded_by": answered_by,
            "after_switch_embedded_by": [(h.get("provenance") or {}).get("embedding_model") for h in after["results"]],
            "server_peak_rss_mb": peak}


def table(report: dict[str, Any]) -> str:
    b, s = report["build"], report["switch"]
    return "\n".join([
        f"built with {b['model']}: {b['chunks']} chunks ({b['artifacts']} artifacts) in {b['seconds']} s, "
        f"{b['chunks_per_s']} chunks/s",
        f"switched {s['started_as'].get('from')} -> {s['started_as'].get('to')}: {s['records']} records in "
        f"{s['seconds']} s ({s['records_per_s']} records/s, {s['rounds']} rounds)",
        f"during it: {s['searches']['calls']} hybrid_search answered, p50 {s['searches']['p50']} ms, "
        f"p95 {s['searches']['p95']} ms, {s['search_errors']} errors; first hit embedded by {s['first_hit_embedded_by']}",
        f"after it: hits embedded by {s['after_switch_embedded_by']}; server peak RSS {s['server_peak_rss_mb']} MB"])
