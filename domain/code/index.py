"""index_codebase: a directory's source files as artifacts (one per file, cut by definition) and a
symbol table, kept current run after run.

A run is claimed in the store (one live run per codebase, in every process and replica); it walks
the tree, reads each file, and re-reads only files whose content changed: their artifact is
replaced, then their row with its symbols (the row comes last, so a row at a content hash says the
artifact of that content exists). Files gone from the tree lose their artifact, then their row. A
run that dies is seen by its holder process being gone (at once, on the same machine) or by its
heartbeat stopping; the next run takes it over and goes on from what was committed.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from domain.access.principal import Identity
from domain.access.rules import owned
from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest
from domain.artifacts.usecases import DeleteArtifact
from domain.chunking import content_hash
from domain.code.model import LANGUAGE_NAMES, CodeFile, Outline, family, language_of, row_starts
from domain.code.roots import Roots
from domain.common import Clock, utc_now
from domain.errors import NotFoundError, ValidationError
from domain.model import ArtifactChunk, RequestContext
from domain.ports import ArtifactStore
from domain.ports.code import Codebase, CodeStore, OutlineReader, SourceTree
from domain.ports.processes import UNKNOWN_PROCESSES, Processes
from domain.validation import require_text

SOURCE = "code"  # the artifacts' source system
HEARTBEAT_SECONDS = 5.0  # a run writes its progress at least this often
STALE_SECONDS = 120.0  # a run silent this long is taken for dead (its holder unknown to be gone): another may claim it
MAX_GLOBS = 50
MAX_SKIPPED_SHOWN = 50
Progress = Callable[[int, int], None]  # (files done, files to do)


def codebase_id(root: str, owner: str, project: str | None) -> str:
    scope = f"p:{project}" if project else f"u:{owner}"
    return "cb_" + hashlib.sha256(f"{scope}\x1f{root}".encode()).hexdigest()[:24]


def check_globs(field: str, value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_GLOBS:
        raise ValidationError(field, f"{field} must be a list of at most {MAX_GLOBS} glob patterns")
    return tuple(require_text(field, v, 300) for v in value)


def check_languages(value: object, field: str = "languages") -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise ValidationError(field, f"{field} must be a non-empty list of: {', '.join(LANGUAGE_NAMES)}")
    wrong = [v for v in value if v not in LANGUAGE_NAMES]
    if wrong:
        raise ValidationError(field, f"{field}: unknown language {wrong[0]!r}; must be among {', '.join(LANGUAGE_NAMES)}")
    return tuple(sorted(set(value)))


@dataclass(frozen=True, slots=True)
class IndexRequest:
    path: object
    roots: Roots | Sequence[str]  # where the path may lie (domain/code/roots.py); a sequence: the server's roots
    include: object = None
    exclude: object = None
    languages: object = None
    project: str | None = None  # index for the project (its members see it) rather than for the caller


@dataclass(frozen=True, slots=True)
class IndexCodebase:
    code: CodeStore
    tree: SourceTree
    outline: OutlineReader
    ingest: IngestArtifact
    delete: DeleteArtifact
    artifacts: ArtifactStore
    identity: Identity = RequestContext
    clock: Clock = utc_now
    now: Callable[[], float] = time.time
    processes: Processes = UNKNOWN_PROCESSES

    def start(self, request: IndexRequest) -> tuple[Codebase, bool]:
        """The codebase claimed for a new run (True), or as its live run has it (False); checked first."""
        include, exclude = check_globs("include", request.include), check_globs("exclude", request.exclude)
        languages = check_languages(request.languages)
        roots = request.roots if isinstance(request.roots, Roots) else Roots(tuple(request.roots))
        root = self.tree.resolve(request.path, roots)
        context = self.identity()
        keys = owned(context, "me")
        acl = (f"p:{request.project}", "p:*") if request.project else tuple(keys["acl"])
        owner = "local" if request.project else keys["owner"]
        cb = Codebase(codebase_id(root, keys["owner"], request.project), root, owner, acl, request.project,
                      include, exclude, languages, "indexing", uuid.uuid4().hex, self.now(),
                      started_at=self.clock(), holder=self.processes.me())
        stale_before = self.now() - STALE_SECONDS
        claimed = self.code.begin_run(cb, stale_before)
        live = None if claimed is not None else self.code.get_codebase(cb.id)
        if live is not None and live.status == "indexing" and self.processes.gone(live.holder):
            # Its process is gone (killed, crashed): taken over now, not after its heartbeat lapses.
            claimed = self.code.begin_run(cb, stale_before, replacing=live.run)
            live = None if claimed is not None else self.code.get_codebase(cb.id)
        if claimed is not None:
            return claimed, True
        if live is None:  # cleared between the two reads
            raise NotFoundError(f"Codebase at {root} was cleared while being claimed; run index_codebase again")
        return live, False

    def run(self, cb: Codebase, progress: Progress | None = None) -> Codebase:
        """Index the claimed codebase to the end; the codebase as the run left it (indexed or failed; as
        the store has it when another run took it over or it was cleared meanwhile)."""
        try:
            return self._run(cb, progress or (lambda done, total: None))
        except TakenOver as lost:
            return lost.codebase or replace(cb, status="cleared")
        except Exception as exc:
            failed = replace(cb, status="failed", error=f"{type(exc).__name__}: {exc}"[:500], heartbeat=self.now(),
                             finished_at=self.clock())
            self.code.update_run(failed)
            raise

    def _run(self, cb: Codebase, progress: Progress) -> Codebase:
        paths = [p for p in self.tree.files(cb.root, cb.include, cb.exclude)
                 if (lang := language_of(p)) is not None and (not cb.languages or family(lang) in cb.languages)]
        known = self.code.code_files(cb.id)
        alive = self.artifacts.get_artifacts(sorted({f.artifact_id for f in known.values()}))
        counts = {"files": len(paths), "done": 0, "indexed": 0, "unchanged": 0, "removed": 0, "skipped": 0,
                  "chunks": 0, "symbols": 0, "failed": 0}
        skipped: list[tuple[str, str]] = []
        beat = Heartbeat(self.code, cb, self.now, counts, skipped)
        progress(0, len(paths))
        for path in paths:
            beat()
            status, chunks, symbols, why = self._file(cb, path, known.get(path), alive, beat)
            counts[status] += 1
            counts["chunks"] += chunks
            counts["symbols"] += symbols
            counts["done"] += 1
            if why:
                skipped.append((path, why))
            progress(counts["done"], len(paths))
        present = set(paths)
        gone = sorted(p for p in known if p not in present)
        for path in gone:
            self._forget(known[path].artifact_id)
        self.code.drop_code_files(cb.id, gone)
        counts["removed"] = len(gone)
        done = replace(cb, status="indexed", heartbeat=self.now(), counts=counts,
                       skipped=tuple(skipped[:MAX_SKIPPED_SHOWN]), finished_at=self.clock(), error=None)
        self.code.update_run(done)
        return done

    def _file(self, cb: Codebase, path: str, known: CodeFile | None, alive: dict[str, Any],
              beat: Callable[..., None]) -> tuple[str, int, int, str | None]:
        """(status, chunks written, symbols written, why skipped or failed)."""
        found = self.tree.read(cb.root, path)
        if found.text is None:
            return "skipped", 0, 0, found.skipped or "unreadable"
        digest = content_hash(found.text)
        if known is not None and known.content_hash == digest and known.artifact_id in alive:
            return "unchanged", 0, 0, None
        language = language_of(path) or "text"
        outline = self.outline(language, found.text) or Outline(language, parsed=False)
        try:
            result = self.ingest(IngestRequest(
                "doc", SOURCE, found.text, source_id=f"{cb.id}/{path}"[:500], source_url=f"file://{cb.root}/{path}",
                title=path[:500], labels=file_labels(cb, path, language),
                shared_with=cb.acl if cb.project else None), lambda *_: beat(False))  # a long file beats too
        except ValidationError as exc:  # over the artifact's limits: said, not fatal to the run
            return "failed", 0, 0, exc.message
        artifact = result.settled()
        records = holders(found.text, outline, artifact.id, result.chunks)
        self.code.put_code_file(CodeFile(cb.id, path, language, digest, found.size, artifact.id, outline.symbols,
                                         outline.imports), records)
        return "indexed", max(1, len(result.chunks)), len(outline.symbols), None

    def _forget(self, artifact_id: str) -> None:
        try:
            self.delete(artifact_id)
        except NotFoundError:
            pass  # gone already (an earlier run stopped between the artifact and the row)


class TakenOver(Exception):
    """The run no longer holds its codebase: another run claimed it (this one was silent too long)."""

    def __init__(self, codebase: Codebase | None) -> None:
        super().__init__("another run took the codebase over")
        self.codebase = codebase


@dataclass
class Heartbeat:
    """Called often; at most every HEARTBEAT_SECONDS it writes the run's progress, after checking the
    run still holds the codebase (TakenOver when not: its work would be another's)."""

    code: CodeStore
    cb: Codebase
    now: Callable[[], float]
    counts: dict[str, int]
    skipped: list[tuple[str, str]]
    last: float = 0.0

    def __call__(self, check: bool = True) -> None:
        """``check``: between files (not inside an ingest, which must not be broken off)."""
        at = self.now()
        if at - self.last < HEARTBEAT_SECONDS:
            return
        self.last = at
        held = self.code.get_codebase(self.cb.id)
        if check and (held is None or held.run != self.cb.run):
            raise TakenOver(held)
        self.code.update_run(replace(self.cb, heartbeat=at, counts=dict(self.counts),
                                     skipped=tuple(self.skipped[:MAX_SKIPPED_SHOWN])))


def file_labels(cb: Codebase, path: str, language: str) -> dict[str, Any]:
    """What a file's artifact is filed by: its codebase, path, language, and a tag per folder above it
    (``dir:src``, ``dir:src/pkg``) so a search narrows to a folder inside both indexes."""
    parts = path.split("/")[:-1]
    folders = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return {"codebase": cb.id, "path": path, "language": family(language), "title": path,
            "tags": [f"dir:{f}" for f in folders]}


def holders(text: str, outline: Outline, artifact: str, chunks: Sequence[ArtifactChunk]) -> list[str]:
    """For each symbol, the record holding its first line: the chunk it starts in, or the artifact."""
    if not chunks:
        return [artifact] * len(outline.symbols)
    starts = [c.start_char for c in chunks]
    lines = row_starts(text)
    found = []
    for symbol in outline.symbols:
        offset = lines[min(max(symbol.start_line, 1), len(lines)) - 1]
        found.append(chunks[max(0, bisect_right(starts, offset) - 1)].id)
    return found
