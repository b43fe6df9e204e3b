"""``memtrove ingest PATH...``: files and folders into the store, one artifact per file, through the
data dir's server (``artifact_ingest``, as an agent would).

An artifact's source id is the file's absolute path, under ``--source-system`` (default ``files``):
so a second run knows each file. A file whose text hashes as the stored version's is not sent again
(the no-op run costs one listing and a hash per file); a changed one is replaced; ``--sync`` deletes
the artifacts of files gone from the folders named. Each file is its own ingest, so Ctrl-C or a
kill loses at most the files in flight, and the next run goes on from there.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio

from domain.chunking import content_hash
from domain.errors import ValidationError
from domain.validation import format_ts
from entrypoints.console.connection import CommandFailed, call
from adapters.files.walk import Found, read, walk
from entrypoints.console.progress import Progress

CALLS_IN_FLIGHT = 2  # one file read and sent while the server embeds another
POLL_SECONDS = 1.0  # how often a file still indexing in the server is asked after


@dataclass
class Summary:
    statuses: Counter[str] = field(default_factory=Counter)  # ingested, replaced, unchanged, indexing
    chunks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"files": sum(self.statuses.values()) + len(self.skipped) + len(self.failed),
                **{s: self.statuses.get(s, 0) for s in ("ingested", "replaced", "unchanged", "indexing")},
                "chunks": self.chunks, "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
                "failed": [{"path": p, "error": e} for p, e in self.failed], "removed": self.removed,
                "seconds": round(self.seconds, 2),
                "chunks_per_second": round(self.chunks / self.seconds, 1) if self.seconds and self.chunks else 0.0}

    def text(self) -> str:
        d = self.as_dict()
        lines = [f"{d['files']} files: {d['ingested']} new, {d['replaced']} replaced, {d['unchanged']} unchanged, "
                 f"{len(self.skipped)} skipped, {len(self.failed)} failed, {len(self.removed)} removed; "
                 f"{self.chunks} chunks in {d['seconds']} s ({d['chunks_per_second']} chunks/s)"]
        if d["indexing"]:
            lines.append(f"{d['indexing']} still indexing in the server (a new file is found by its words now, "
                         "by meaning when complete)")
        return "\n".join(lines)


def roots_of(paths: Sequence[str]) -> list[Path]:
    roots = []
    for given in paths:
        path = Path(given).expanduser()
        if not path.exists():
            raise ValidationError("PATH", f"no such file or folder: {given}")
        roots.append(path.resolve())
    return roots


async def stored(client: Any, source_system: str, prefix: str) -> dict[str, dict[str, Any]]:
    """What the caller stored under ``prefix`` for this source system: source id -> its listing."""
    known: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        page = await call(client, "artifact_list", source_system=source_system, source_id_prefix=prefix, limit=500,
                          cursor=cursor, mine=True)
        known.update({a["source_id"]: a for a in page["results"] if a.get("source_id")})
        cursor = page.get("next_cursor")
        if not cursor:
            return known


async def ingest(client: Any, paths: Sequence[str], artifact_type: str, source_system: str, include: Sequence[str],
                 exclude: Sequence[str], sync: bool, progress: Progress) -> Summary:
    started = time.perf_counter()
    roots = roots_of(paths)
    files = list(dict.fromkeys(walk(roots, include, exclude)))
    known: dict[str, dict[str, Any]] = {}
    for root in roots:
        found = await stored(client, source_system, root.as_posix() + ("/" if root.is_dir() else ""))
        known.update({k: v for k, v in found.items() if root.is_dir() or k == root.as_posix()})
    summary = Summary()
    progress.start(len(files), sum(_size(f) for f in files))
    queue = iter(files)
    indexing: dict[str, str] = {}  # artifact id -> path
    polling = anyio.Lock()

    async def worker() -> None:
        for path in queue:
            # Files the server still embeds (their calls' budget ran out) count against the calls in
            # flight: else a folder starts an ingest per file at once, and the server's memory grows with them.
            while len(indexing) >= CALLS_IN_FLIGHT:
                async with polling:
                    await _settle(client, indexing, summary, progress, keep=CALLS_IN_FLIGHT - 1)
            found = read(path)
            status, chunks = await _one(client, found, known, artifact_type, source_system, summary, indexing)
            summary.chunks += chunks
            progress.done(found.path.as_posix(), status, chunks, _size(path))

    async with anyio.create_task_group() as group:
        for _ in range(CALLS_IN_FLIGHT):
            group.start_soon(worker)
    await _settle(client, indexing, summary, progress)
    if sync:
        present = {f.resolve().as_posix() for f in files}
        for source_id, listed in sorted(known.items()):
            if source_id not in present and not Path(source_id).exists():
                try:
                    await call(client, "artifact_delete", artifact_id=listed["artifact_id"])
                except (CommandFailed, ValidationError) as exc:
                    summary.failed.append((source_id, f"not removed: {exc.message}"))
                    continue
                summary.removed.append(source_id)
                progress.say(f"removed {source_id} (its file is gone)")
    summary.seconds = time.perf_counter() - started
    progress.finish()
    return summary


async def _one(client: Any, found: Found, known: dict[str, dict[str, Any]], artifact_type: str, source_system: str,
               summary: Summary, indexing: dict[str, str]) -> tuple[str, int]:
    source_id = found.path.as_posix()
    if found.text is None:
        summary.skipped.append((source_id, found.skipped or "unreadable"))
        return "skipped: " + (found.skipped or "unreadable"), 0
    listed = known.get(source_id)
    if listed and listed.get("content_hash") == content_hash(found.text) and listed.get("artifact_type") == artifact_type:
        summary.statuses["unchanged"] += 1
        return "unchanged", 0
    try:
        mtime = datetime.fromtimestamp(found.path.stat().st_mtime, timezone.utc)
    except OSError as exc:  # gone or unreadable since it was read
        summary.skipped.append((source_id, f"unreadable: {exc.strerror or exc}"))
        return "skipped: unreadable", 0
    try:
        got = await call(client, "artifact_ingest", artifact_type=artifact_type, source_system=source_system,
                         content=found.text, source_id=source_id, title=found.path.name[:500], ts=format_ts(mtime))
    except (CommandFailed, ValidationError) as exc:
        summary.failed.append((source_id, exc.message))
        return f"failed: {exc.message}", 0
    status = str(got.get("status", "ingested"))
    if status == "indexing":
        indexing[str(got.get("artifact_id"))] = source_id
    summary.statuses[status] += 1
    # A short file is embedded whole: one record, counted as one chunk.
    return status, max(1, int(got.get("num_chunks") or 0)) if status in ("ingested", "replaced") else 0


async def _settle(client: Any, indexing: dict[str, str], summary: Summary, progress: Progress,
                  keep: int = 0) -> None:
    """Wait for the files the server still indexes (a call's budget ran out) to be committed or fail,
    until at most ``keep`` are left."""
    while len(indexing) > keep:
        progress.say(f"waiting for {len(indexing)} file(s) still indexing in the server")
        await anyio.sleep(POLL_SECONDS)
        for artifact_id, path in list(indexing.items()):
            got = await call(client, "artifact_get", artifact_id=artifact_id)
            job = got.get("new_version") or (got if "chunks_total" in got else {})
            if job.get("status") == "failed":
                summary.statuses["indexing"] -= 1
                summary.failed.append((path, str(job.get("error"))))
            elif job.get("status") != "indexing":
                summary.statuses["indexing"] -= 1
                summary.statuses["ingested"] += 1
                chunks = (got.get("metadata") or {}).get("num_chunks")  # artifact_get's (not the ingest's) answer
                summary.chunks += max(1, int(chunks or 0))
            else:
                continue
            del indexing[artifact_id]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
