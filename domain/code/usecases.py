"""The code toolset's reads and clear: a codebase's status, its removal, and search_code."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from domain.access.principal import Identity
from domain.access.rules import access_fields, may_change, visible
from domain.artifacts.usecases import CHUNKS, WHOLE, DeleteArtifact
from domain.code.index import SOURCE, STALE_SECONDS, check_languages
from domain.code.model import SYMBOL_KINDS, CodeFile, Symbol, folded
from domain.errors import NotFoundError, ValidationError
from domain.model import Hit, RequestContext
from domain.ports.code import Codebase, CodeStore, SourceTree
from domain.ports.processes import UNKNOWN_PROCESSES, Processes
from domain.search.retrieve import Retriever
from domain.search.symbol_signal import symbol_keys
from domain.validation import require_choice, require_int, require_text

SNIPPET_LINES = 12


def shown_status(cb: Codebase, now: float, processes: Processes | None = None) -> str:
    """indexing, indexed, failed, or interrupted (a run whose process died: known gone by ``processes``,
    or silent past STALE_SECONDS)."""
    if cb.status == "indexing" and (cb.heartbeat < now - STALE_SECONDS
                                    or (processes is not None and processes.gone(cb.holder))):
        return "interrupted"
    return cb.status


@dataclass(frozen=True, slots=True)
class Codebases:
    """The codebases the caller may see, found by a path at or inside their roots."""

    code: CodeStore
    tree: SourceTree
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time
    processes: Processes = UNKNOWN_PROCESSES

    def visible(self, context: RequestContext | None = None) -> list[Codebase]:
        context = context or self.identity()
        return [cb for cb in self.code.list_codebases() if visible(access_fields(cb), context, self.now())]

    def holding(self, path: object, project: object = None) -> tuple[list[Codebase], str]:
        """The caller's codebases holding ``path`` (its own or its project's), deepest root first, and
        the path below that root ("" at the root itself)."""
        where = self.tree.locate(path)
        found = [cb for cb in self.visible() if where == cb.root or where.startswith(cb.root.rstrip("/") + "/")]
        if project is not None:
            found = [cb for cb in found if cb.project == project]
        if not found:  # said of the path as given: where it resolves to is not told
            raise NotFoundError(f"No indexed codebase of yours holds path {path!r} (field 'path'); index it with "
                                "index_codebase")
        found.sort(key=lambda cb: -len(cb.root))
        return found, where[len(found[0].root):].strip("/")


@dataclass(frozen=True, slots=True)
class IndexStatus:
    codebases: Codebases
    now: Callable[[], float] = time.time

    def __call__(self, path: object) -> list[Codebase]:
        found, _ = self.codebases.holding(path)
        return [replace(cb, status=shown_status(cb, self.now(), self.codebases.processes)) for cb in found]


@dataclass(frozen=True, slots=True)
class ClearIndex:
    """Every file's artifact, then the codebase's rows; refused while a run is live."""

    codebases: Codebases
    code: CodeStore
    delete: DeleteArtifact
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, path: object, project: object = None) -> tuple[Codebase, int]:
        found, below = self.codebases.holding(path, project)
        cb = found[0]
        if below:
            raise ValidationError("path", f"path must be a codebase's root ({cb.root}), not a path inside it")
        if not may_change(cb, self.identity()):
            raise ValidationError("path", f"The codebase at {cb.root} is another owner's; only they may clear it")
        if shown_status(cb, self.now(), self.codebases.processes) == "indexing":
            raise ValidationError("path", f"The codebase at {cb.root} is being indexed; clear it when "
                                          "get_indexing_status no longer says indexing")
        files = self.code.code_files(cb.id)
        for file in files.values():
            try:
                self.delete(file.artifact_id)
            except NotFoundError:
                pass
        self.code.drop_codebase(cb.id)
        return cb, len(files)


@dataclass(frozen=True, slots=True)
class CodeHit:
    codebase: Codebase
    path: str
    language: str
    start_line: int
    end_line: int
    symbol: Symbol | None  # the definition the hit is about (the one the query names, its first, or the one around it)
    symbols: tuple[Symbol, ...]  # every definition starting in it
    within: tuple[Symbol, ...]  # the definitions around its first line, outermost first
    snippet: str
    hit: Hit


@dataclass(frozen=True, slots=True)
class SearchCode:
    """Hybrid search (meaning, words, exact tokens, symbol names) over indexed codebases' chunks; by
    default in memtrove's default profile, whose symbol signal reads the symbol table."""

    retrieve: Retriever
    codebases: Codebases
    code: CodeStore

    def __call__(self, query: object, path: object = None, language: object = None, symbol_kind: object = None,
                 limit: object = 10, mode: object = None, profile: object = None) -> list[CodeHit]:
        text = require_text("query", query, 500, label="Query")
        count = require_int("limit", limit, 1, 50)
        languages = check_languages(None if language is None else [language], "language")
        kind = None if symbol_kind is None else require_choice("symbol_kind", symbol_kind, SYMBOL_KINDS)
        where: dict[str, Any] = {"source_system": SOURCE}
        if path is None:
            found = self.codebases.visible()
            if not found:
                raise NotFoundError("No codebase is indexed yet; index one with index_codebase")
        else:
            found, below = self.codebases.holding(path)
            found = found[:1]
            if below and below in self.code.code_files(found[0].id):
                where["path"] = below
            elif below:
                where[f"tag:dir:{below}"] = True
        where["codebase"] = {"$in": [cb.id for cb in found]}
        if languages:
            where["language"] = languages[0]
        by_id = {cb.id: cb for cb in found}
        fetch = count * 3 if kind else count
        # No rerank stage: its model learned from conversations and prose, never from code.
        hits = self.retrieve(text, {WHOLE: where, CHUNKS: dict(where)}, fetch, mode, profile, reranked=False)
        keys = symbol_keys(text)
        results: list[CodeHit] = []
        files: dict[tuple[str, str], CodeFile | None] = {}
        for hit in hits:
            found_hit = self._read(hit, by_id, files, keys)
            if found_hit is None or (kind and not any(s.kind == kind for s in found_hit.symbols)):
                continue
            results.append(found_hit)
            if len(results) == count:
                break
        return results

    def _read(self, hit: Hit, by_id: dict[str, Codebase], files: dict[tuple[str, str], CodeFile | None],
              keys: dict[str, float]) -> CodeHit | None:
        source_id = str(hit.fields.get("provenance", {}).get("source_id") or "")
        cb_id, _, path = source_id.partition("/")
        cb = by_id.get(cb_id)
        if cb is None:
            return None
        if (cb_id, path) not in files:
            files[(cb_id, path)] = self.code.file_symbols(cb_id, path)
        file = files[(cb_id, path)]
        structure = hit.fields.get("structure") or {}
        first = int(structure.get("start_line") or 1)
        last = int(structure.get("end_line") or first + hit.content.rstrip("\n").count("\n"))
        symbols = file.symbols if file else ()
        inside = tuple(s for s in symbols if first <= s.start_line <= last)
        around = tuple(s for s in symbols if s.start_line < first <= s.end_line)
        named = [s for s in inside if folded(s.qualified_name) in keys or folded(s.name) in keys]
        symbol = named[0] if named else (inside[0] if inside else (around[-1] if around else None))
        return CodeHit(cb, path, file.language if file else "text", first, last, symbol, inside, around,
                       snippet_of(hit.content, first, symbol), hit)


def snippet_of(content: str, first: int, symbol: Symbol | None, lines: int = SNIPPET_LINES) -> str:
    """Up to ``lines`` lines of the hit, from its symbol's first line when it has one."""
    rows = content.splitlines()
    start = max(0, symbol.start_line - first) if symbol else 0
    shown = rows[start:start + lines]
    return "\n".join(shown) + ("\n…" if start + lines < len(rows) else "")


def codebase_view(cb: Codebase, now: float) -> dict[str, Any]:
    """What the tools show of a codebase."""
    view: dict[str, Any] = {"path": cb.root, "codebase_id": cb.id, "status": shown_status(cb, now),
                            "owner": cb.project and f"project {cb.project}" or cb.owner,
                            "started_at": cb.started_at, "finished_at": cb.finished_at, **dict(cb.counts)}
    for name, value in (("include", cb.include), ("exclude", cb.exclude), ("languages", cb.languages)):
        if value:
            view[name] = list(value)
    if cb.skipped:
        view["skipped_files"] = [{"path": p, "reason": r} for p, r in cb.skipped]
    if cb.error:
        view["error"] = cb.error
    return view
