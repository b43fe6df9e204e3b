"""Spec 001's result and error shapes for the sessions toolset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from domain.artifacts.input import IngestRequest
from domain.chunking import content_hash
from domain.errors import MemtroveError
from domain.model import ArtifactChunk
from domain.sessions.scope import (SessionMemory, chunk_type, header_path, heading_line, heading_of, section_level,
                                   session_label)
from domain.search.passages import Passage
from domain.sessions.search import SCOPED_SIMILARITY, Section
from domain.sessions.store import StoredSessionMemory
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import Toolbox

ERROR_TYPES = {"validation_error": "ValidationError", "not_found": "NotFoundError", "storage_error": "DatabaseError",
               "embedding_error": "EmbeddingError", "configuration_error": "ConfigurationError"}


def failure(exc: MemtroveError, fields: dict[str, Any] | None = None) -> CallToolResult:
    """``success: false``, the error's type, its message (and the field, for bad input), the tool's other
    result ``fields`` at None or their defaults (spec 001's error response); isError set."""
    body: dict[str, Any] = {**(fields or {}), "success": False, "error": ERROR_TYPES.get(exc.kind, "MemoryError"),
                            "message": exc.message}
    if exc.field is not None:
        body["field"] = exc.field
    return CallToolResult(content=[TextContent(type="text", text=f"{body['error']}: {exc.message}")],
                          structured_content=body, is_error=True)


_STORED = {"memory_id": None, "memory_type": None, "agent_id": None, "session_id": None, "content_hash": None,
           "chunks_created": 0, "created_at": None, "duplicate": False}
_MEMORIES = {"results": [], "total_results": 0, "query": None, "filters": {}, "limit": None, "latest_first": None}
_RESULT_FIELDS: dict[str, dict[str, Any]] = {
    "load_session_context_for_task": {"session_context": None, "input_prompts": [], "recent_reports": [],
                                      "recent_working_memory": []},
    "expand_chunk_context": {"memory_id": None, "target_chunk_index": None, "context_window": None,
                             "chunks_returned": 0, "expanded_content": None, "chunks": []},
    "reconstruct_document": {"memory_id": None, "content": None, "title": None, "memory_type": None,
                             "chunk_count": 0},
    "get_memory_by_id": {"memory": None},
    "get_session_stats": {"session_id": None, "memory_counts": {}, "agent_counts": {}, "total_memories": 0,
                          "total_chunks": 0, "earliest_created": None, "latest_created": None},
    "list_sessions": {"sessions": [], "total_sessions": 0},
    "write_document_to_file": {"file_path": None, "memory_id": None, "bytes_written": 0},
    "delete_memory": {"memory_id": None},
    "cleanup_old_memories": {"memories_deleted": 0, "chunks_deleted": 0, "dry_run": None},
    "search_session_context": _MEMORIES, "search_input_prompts": _MEMORIES, "search_system_memory": _MEMORIES,
}
GRANULARITY = {"specific_chunks": "fine", "section_context": "medium", "full_documents": "coarse"}  # by tool suffix


def result_fields(tool: str) -> dict[str, Any]:
    """The result fields of a sessions tool at None or their defaults, for its error responses."""
    if tool.startswith("store_"):
        return _STORED
    for suffix, granularity in GRANULARITY.items():
        if tool.endswith(f"_{suffix}"):
            return {**(_MEMORIES if granularity == "coarse" else {"results": [], "total_results": 0}),
                    "granularity": granularity}
    return _RESULT_FIELDS.get(tool, {})


class SessionsToolbox(Toolbox):
    """A module of the sessions toolset: required arguments checked, errors in spec 001's shape."""

    toolset = "sessions"
    checks_required = True

    def failure_of(self, name: str) -> Callable[[MemtroveError], CallToolResult]:
        fields = result_fields(name)
        return lambda exc: failure(exc, fields)


def ok(body: dict[str, Any], text: str) -> CallToolResult:
    return render.ok({"success": True, **body, "error": None}, text)


def stored(result: StoredSessionMemory) -> CallToolResult:
    a = result.artifact
    what = session_label(a, "memory_type")
    message = (f"Memory already stored (duplicate content in this scope): {a.id}" if result.duplicate else
               f"Stored {what} {a.id}" + (f" in {result.chunks_created} chunks" if result.chunks_created else ""))
    return ok({"memory_id": a.id, "memory_type": what, "agent_id": session_label(a, "agent_id"),
               "session_id": session_label(a, "session_id"), "content_hash": a.content_hash[:16],
               "chunks_created": result.chunks_created, "created_at": a.ts, "duplicate": result.duplicate,
               "message": message}, message)


def storing(planned: IngestRequest, latest: tuple[str, int, int] | None, chunks: int | None,
            duplicate: bool = False) -> CallToolResult:
    """The memory is being embedded in the background: the call's budget ran out, or (``duplicate``)
    another call is storing the same memory. ``chunks_created``: 0 for a memory kept whole, else its
    chunks once known (None while they are cut)."""
    labels = dict(planned.labels or {})
    memory_id, done, total = latest or (None, 0, 0)
    said = "Memory already being stored (duplicate content in this scope)" if duplicate else "Storing"
    message = (f"{said} {labels.get('memory_type')} {memory_id or ''}: {done} of {total} pieces embedded; it goes on "
               "in the background and is searchable when complete")
    return ok({"memory_id": memory_id, "memory_type": labels.get("memory_type"), "agent_id": labels.get("agent_id"),
               "session_id": labels.get("session_id"), "content_hash": content_hash(planned.content)[:16],
               "chunks_created": 0 if planned.keep_whole else chunks, "created_at": None, "duplicate": duplicate,
               "status": "indexing", "chunks_done": done, "chunks_total": total, "message": message}, message)


def memory(m: SessionMemory, similarity: float = SCOPED_SIMILARITY, source: str = "scoped") -> dict[str, Any]:
    a = m.artifact
    tags = a.labels.get("tags") or []
    return {"id": a.id, "memory_type": session_label(a, "memory_type"), "agent_id": session_label(a, "agent_id"),
            "session_id": session_label(a, "session_id"), "session_iter": session_label(a, "session_iter"),
            "task_code": session_label(a, "task_code"), "content": m.content, "title": a.title, "description": None,
            "tags": list(tags), "metadata": {"category": session_label(a, "category"), "chunk_count": a.num_chunks,
                                             "token_count": a.token_count},
            "content_hash": a.content_hash[:16], "created_at": a.ts, "updated_at": a.ingested_at,
            "accessed_at": m.accessed_at, "access_count": m.access_count, "similarity": similarity,
            "source_type": source}


def memories(found: list[dict[str, Any]], query: str | None, filters: dict[str, Any], limit: int,
             latest_first: bool, granularity: str | None = None) -> CallToolResult:
    """Whole memories (scoped searches, system memory, COARSE: which also says its granularity)."""
    lines = [f"Found {len(found)} memories" + (f" for {query!r}" if query else "") + ":"]
    lines += [f"[{m['id']}] {m['memory_type']} {m['session_id'] or ''} {m['session_iter'] or ''} "
              f"({m['agent_id']}, {m['created_at']}): {render.preview(m['content'], 100)}" for m in found]
    body = {"results": found, "total_results": len(found), "query": query, "filters": filters, "limit": limit,
            "latest_first": latest_first, "message": None}
    return ok({**body, "granularity": granularity} if granularity else body, "\n".join(lines))


def chunk_fields(chunk: ArtifactChunk) -> dict[str, Any]:
    return {"chunk_type": chunk_type(chunk), "header_path": header_path(chunk), "level": section_level(chunk)}


def whole_fields(title: str | None, content: str) -> dict[str, Any]:
    """A memory kept whole: its title at the level of the heading it came from (else a top heading)."""
    heading = heading_of(content)
    level = heading[0] if heading and heading[1] == title else 1 if title else 0
    return {"chunk_type": "text", "header_path": f"{'#' * level} {title}" if title else "", "level": level}


def passage(p: Passage) -> dict[str, Any]:
    c = p.chunk
    return {"chunk_id": c.id if c else p.artifact.id, "memory_id": p.artifact.id, "chunk_index": c.index if c else 0,
            "chunk_content": p.text, **(chunk_fields(c) if c else whole_fields(p.artifact.title, p.text)),
            "similarity": p.similarity, "source": "chunk", "granularity": "fine"}


def section(s: Section) -> dict[str, Any]:
    # The key is the path's first two titles: no key, no headings above the section's chunks either.
    path = (heading_line(s.chunks[0], len(s.key)) if s.chunks
            else whole_fields(s.artifact.title, s.content)["header_path"])
    return {"memory_id": s.artifact.id, "section_header": path, "section_content": s.content, "header_path": path,
            "chunks_in_section": max(1, len(s.chunks)), "matched_chunks": s.matched,
            "match_ratio": round(s.match_ratio, 4), "auto_merged": s.match_ratio >= 0.6, "similarity": s.similarity,
            "source": "expanded_section", "granularity": "medium"}


def granular(results: list[dict[str, Any]], granularity: str, query: str) -> CallToolResult:
    lines = [f"Found {len(results)} {granularity} results for {query!r}:"]
    for r in results:
        where = r.get("header_path") or r.get("section_header") or ""
        text = r.get("chunk_content") or r.get("section_content") or ""
        lines.append(f"[{r['memory_id']}] {r['similarity']:.3f} {where}: {render.preview(text, 100)}")
    return ok({"results": results, "total_results": len(results), "granularity": granularity, "message": None},
              "\n".join(lines))
