"""``memtrove ingest PATH...``: files and folders into the store, one artifact per file, through the
data dir's server (``artifact_ingest``, as an agent would).

An artifact's source id is the file's absolute path, under ``--source-system`` (default ``files``):
so a second run knows each file. A file whose text hashes as the stored version's is not sent again
(the no-op run costs one listing and a hash per file); a changed one is replaced; ``--sync`` deletes
the artifacts of files gone from the folders named. Each file is its own ingest, so Ctrl-C or a
kill loses at most the files in flight, and the next run goes on from there.

Each call asks for progress notifications (the chunks the server embedded) for the status line
(progress.py). A call whose budget runs out answers "indexing" while the server goes on: such a file is
asked after with ``artifact_get`` until it is committed or fails, and then gets its line like any other.
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
    indexing = Indexing()

    async def worker() -> None:
        for path in queue:
            # Files the server still embeds (their calls' budget ran out) count against the calls in
            # flight: else a folder starts an ingest per file at once, and the server's memory grows with them.
            while len(indexing.files) >= CALLS_IN_FLIGHT:
                await indexing.changed()
            await _one(client, read(path), known, artifact_type, source_system, summary, indexing, progress)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(progress.ticking)
            group.start_soon(_watch, client, indexing, known, summary, progress)
            async with anyio.create_task_group() as workers:
                for _ in range(CALLS_IN_FLIGHT):
                    workers.start_soon(worker)
            while indexing.files:
                await indexing.changed()
            group.cancel_scope.cancel()
    except BaseException as exc:
        if _interrupted(exc):  # Ctrl-C: what the server has goes on there
            progress.interrupted(indexing.files)
        else:  # the error is said on a line of its own, not after the status line
            progress.finish()
        raise
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


class Indexing:
    """Files whose call answered while the server goes on indexing them (artifact id -> path), and a
    wake-up for whoever waits for one of them to end."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self._changed = anyio.Event()

    def add(self, artifact_id: str, path: str) -> None:
        self.files[artifact_id] = path

    def remove(self, artifact_id: str) -> None:
        del self.files[artifact_id]
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        await self._changed.wait()


async def _one(client: Any, found: Found, known: dict[str, dict[str, Any]], artifact_type: str, source_system: str,
               summary: Summary, indexing: Indexing, progress: Progress) -> None:
    source_id, size = found.path.as_posix(), _size(found.path)
    if found.text is None:
        reason = found.skipped or "unreadable"
        summary.skipped.append((source_id, reason))
        progress.end(source_id, size, f"skipped {source_id}: {reason}")
        return
    listed = known.get(source_id)
    if listed and listed.get("content_hash") == content_hash(found.text) and listed.get("artifact_type") == artifact_type:
        summary.statuses["unchanged"] += 1
        progress.end(source_id, size, f"unchanged {source_id}")
        return
    try:
        mtime = datetime.fromtimestamp(found.path.stat().st_mtime, timezone.utc)
    except OSError as exc:  # gone or unreadable since it was read
        reason = f"unreadable: {exc.strerror or exc}"
        summary.skipped.append((source_id, reason))
        progress.end(source_id, size, f"skipped {source_id}: {reason}")
        return
    progress.begin(source_id, size)

    async def told(done: float, total: float | None, _: str | None) -> None:
        progress.advance(source_id, int(done), int(total or 0))

    try:
        got: dict[str, Any] = {}
        # An answer without the artifact's id came before the server named it (its budget ran out first):
        # the same content again joins the ingest under way, and says which artifact it is.
        while not got or got.get("status") == "indexing" and not got.get("artifact_id"):
            got = await call(client, "artifact_ingest", progress_callback=told, artifact_type=artifact_type,
                             source_system=source_system, content=found.text, source_id=source_id,
                             title=found.path.name[:500], ts=format_ts(mtime))
    except (CommandFailed, ValidationError) as exc:
        summary.failed.append((source_id, exc.message))
        progress.end(source_id, size, f"failed {source_id}: {exc.message}")
        return
    status = str(got.get("status", "ingested"))
    if status == "indexing":
        summary.statuses["indexing"] += 1
        indexing.add(str(got["artifact_id"]), source_id)
        progress.advance(source_id, int(got.get("chunks_done") or 0), int(got.get("chunks_total") or 0))
        progress.returned(source_id)
        return
    summary.statuses[status] += 1
    if status not in ("ingested", "replaced"):
        progress.end(source_id, size, f"{status} {source_id}")
        return
    # A short file is embedded whole: one record, counted as one chunk.
    _ended(summary, progress, source_id, size, status, max(1, int(got.get("num_chunks") or 0)))


async def _watch(client: Any, indexing: Indexing, known: dict[str, dict[str, Any]], summary: Summary,
                 progress: Progress) -> None:
    """Ask after the files the server still indexes (their call's budget ran out) until each is
    committed or failed: their progress on the status line, then their own line."""
    while True:
        await anyio.sleep(POLL_SECONDS)
        for artifact_id, path in list(indexing.files.items()):
            try:
                got = await call(client, "artifact_get", artifact_id=artifact_id)
            except (CommandFailed, ValidationError) as exc:  # deleted meanwhile, say
                got = {"new_version": {"status": "failed", "error": f"its progress could not be read: {exc.message}"}}
            job = got.get("new_version") or (got if "chunks_total" in got else {})
            if job.get("status") == "indexing":
                progress.advance(path, int(job.get("chunks_done") or 0), int(job.get("chunks_total") or 0))
                continue
            summary.statuses["indexing"] -= 1
            size = progress.files[path].size if path in progress.files else 0
            if job.get("status") == "failed":
                summary.failed.append((path, str(job.get("error"))))
                progress.end(path, size, f"failed {path}: {job.get('error')}")
            else:
                chunks = (got.get("metadata") or {}).get("num_chunks")  # artifact_get's (not the ingest's) answer
                status = "replaced" if path in known else "ingested"
                summary.statuses[status] += 1
                _ended(summary, progress, path, size, status, max(1, int(chunks or 0)))
            indexing.remove(artifact_id)


def _ended(summary: Summary, progress: Progress, path: str, size: int, status: str, chunks: int) -> None:
    summary.chunks += chunks
    progress.end(path, size, f"{'indexed' if status == 'ingested' else status} {path} ({chunks} chunk{'s' if chunks > 1 else ''})", chunks)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is (or holds only) an interruption: Ctrl-C, or the cancellation it causes."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_interrupted(inner) for inner in exc.exceptions)
    return isinstance(exc, (KeyboardInterrupt, anyio.get_cancelled_exc_class()))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
