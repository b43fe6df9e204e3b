"""Code toolset (spec 002 phase 3): index a directory of source code, search it by meaning, words and
symbol names, see how its indexing goes, and clear it. A view over the same artifacts and retrieval
as every toolset: a file is an artifact, cut at its definitions; the symbols are a table beside it.

A path is on the server's machine, under one of MEMTROVE_CODE_ROOTS (narrowed by the roots a local
client declares); without them, under a root a client declares over stdio, and nowhere over HTTP
(domain/code/roots.py). Indexing runs in the background: the call waits up to MEMTROVE_CALL_BUDGET
seconds with progress notifications, then answers with where it got to.
"""

from __future__ import annotations

import os
import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from domain.code.index import IndexCodebase, IndexRequest
from domain.code.model import LANGUAGE_NAMES, SYMBOL_KINDS
from domain.code.roots import Roots
from domain.code.usecases import ClearIndex, CodeHit, IndexStatus, SearchCode, codebase_view
from domain.errors import ValidationError
from domain.validation import optional_project
from domain.ports.code import Codebase
from entrypoints.mcp import identity, render
from entrypoints.mcp.long_calls import StillRunning, run_long
from entrypoints.mcp.roots import client_roots, over_http
from entrypoints.mcp.tooling import Mode, Profile
from entrypoints.mcp.toolkit import DESTRUCTIVE, READ_ONLY, Toolbox, tool

Path = Annotated[str, Field(description="Absolute path of a directory on the server's machine")]
Project = Annotated[str | None, Field(description="Index it for this project (its members share it) "
                                                  "instead of for you")]


def hit_view(found: CodeHit) -> dict[str, Any]:
    view: dict[str, Any] = {"path": found.path, "codebase": found.codebase.root, "language": found.language,
                            "start_line": found.start_line, "end_line": found.end_line,
                            "score": round(found.hit.score, 6), "signals": found.hit.fields.get("signals", {})}
    if found.symbol is not None:
        view |= {"symbol": found.symbol.qualified_name, "symbol_kind": found.symbol.kind,
                 "signature": found.symbol.signature,
                 "symbol_lines": [found.symbol.start_line, found.symbol.end_line]}
    if len(found.symbols) > 1:
        view["symbols"] = [s.qualified_name for s in found.symbols][:10]
    if found.within:
        view["inside"] = found.within[-1].qualified_name
    return view | {"snippet": found.snippet, "artifact_id": found.hit.fields.get("artifact_id"),
                   "record_id": found.hit.id}


def progress_text(cb: dict[str, Any]) -> str:
    counts = (f"{cb.get('done', 0)} of {cb.get('files', 0)} files: {cb.get('indexed', 0)} indexed, "
              f"{cb.get('unchanged', 0)} unchanged, {cb.get('removed', 0)} removed, {cb.get('skipped', 0)} skipped, "
              f"{cb.get('failed', 0)} failed; {cb.get('chunks', 0)} chunks, {cb.get('symbols', 0)} symbols")
    return f"{cb['path']}: {cb['status']}, {counts}" + (f" ({cb['error']})" if cb.get("error") else "")


class CodeTools(Toolbox):
    toolset = "code"

    def roots(self, ctx: Context | None) -> Roots:
        """The server's roots, and the client's unless the call came over HTTP (never asked there)."""
        server = tuple(r for r in self.runtime.settings.memtrove_code_roots.split(os.pathsep) if r.strip())
        if over_http(ctx):
            return Roots(server, None, remote=True)
        declared = client_roots(ctx)
        return Roots(server, None if declared is None else tuple(declared))

    def check_project(self, ctx: Context | None, project: object) -> None:
        if optional_project(project) is not None and not identity.transport_principal(ctx, self.local).in_project(
                project):
            raise ValidationError("project", f"This caller may not work in project {project!r}")

    @tool("Index a directory of source code (Python, JavaScript, TypeScript, Go, Rust, Java, C, C++) for "
          "search_code: each file cut at its functions, classes and methods, with a symbol table. .gitignore, "
          "vendored and generated files are skipped. Incremental: a second run re-reads only changed files and "
          "drops deleted ones. Runs in the background; get_indexing_status shows progress.", writes=True)
    def index_codebase(
        self,
        path: Path,
        include: Annotated[list[str] | None, Field(description="Only files matching these globs "
                                                               "(gitignore style, e.g. src/**)")] = None,
        exclude: Annotated[list[str] | None, Field(description="Skip files matching these globs")] = None,
        languages: Annotated[list[str] | None, Field(description="Only: " + ", ".join(LANGUAGE_NAMES))] = None,
        project: Project = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        self.check_project(ctx, project)
        indexer = self.use(IndexCodebase)()
        cb, started = indexer.start(IndexRequest(path, self.roots(ctx), include, exclude, languages, project))
        if not started:
            view = codebase_view(cb, time.time())
            return render.ok(view, f"Already being indexed: {progress_text(view)}. get_indexing_status shows progress.")
        result = run_long(self.runtime, ctx, lambda tracker: indexer.run(cb, lambda done, total: tracker(
            cb.id, done, total)), self.runtime.settings.memtrove_call_budget, unit="files read")
        if isinstance(result, StillRunning):
            _, done, total = result.latest or (cb.id, 0, 0)
            view = codebase_view(cb, time.time()) | {"done": done, "files": total}
            return render.ok(view, f"Indexing {cb.root} in the background: {done} of {total} files read. "
                                   "get_indexing_status shows progress; search_code finds what is done.")
        view = codebase_view(result, time.time())
        return render.ok(view, f"Indexed {progress_text(view)}.")

    @tool("How the indexing of a directory goes or went: status (indexing, indexed, failed, interrupted), "
          "files indexed, unchanged, removed and skipped (with why), chunks and symbols.", annotations=READ_ONLY)
    def get_indexing_status(self, path: Annotated[str, Field(description="The indexed directory (or a path "
                                                                         "inside it)")]) -> CallToolResult:
        found: list[Codebase] = self.use(IndexStatus)()(path)
        views = [codebase_view(cb, time.time()) for cb in found]
        return render.ok({"codebases": views}, "\n".join(progress_text(v) for v in views))

    @tool("Remove an indexed directory from the index: its files' chunks, symbols and status. The files on "
          "disk are not touched.", annotations=DESTRUCTIVE, writes=True)
    def clear_index(self, path: Annotated[str, Field(description="The indexed directory's path")],
                    project: Project = None, ctx: Context | None = None) -> CallToolResult:
        self.check_project(ctx, project)
        cb, files = self.use(ClearIndex)()(path, project)
        return render.ok({"path": cb.root, "codebase_id": cb.id, "files_removed": files},
                         f"Cleared {cb.root}: {files} files removed from the index.")

    @tool("Search indexed code: where is something done, or where is a symbol defined. Identifiers match "
          "in any spelling (getUserById, get_user_by_id, get user by id); meaning matches docstrings and "
          "bodies. Each hit has file, lines, symbol and a snippet.", annotations=READ_ONLY)
    def search_code(
        self,
        query: Annotated[str, Field(description="What you look for, 1-500 characters")],
        path: Annotated[str | None, Field(description="Only this codebase, folder or file (absolute path)")] = None,
        language: Annotated[str | None, Field(description="Only this language: " + ", ".join(LANGUAGE_NAMES))] = None,
        symbol_kind: Annotated[str | None, Field(description="Only hits holding a definition of this kind: "
                                                             + ", ".join(SYMBOL_KINDS))] = None,
        limit: Annotated[int, Field(description="Max results, 1-50")] = 10,
        mode: Mode = "hybrid",
        profile: Profile = None,
    ) -> CallToolResult:
        hits = self.use(SearchCode)()(query, path, language, symbol_kind, limit, mode, profile)
        lines = [f"{len(hits)} results:"]
        lines += [f"{h.path}:{h.start_line}-{h.end_line}" + (f" {h.symbol.qualified_name}" if h.symbol else "")
                  for h in hits]
        return render.ok({"count": len(hits), "results": [hit_view(h) for h in hits]}, "\n".join(lines))
