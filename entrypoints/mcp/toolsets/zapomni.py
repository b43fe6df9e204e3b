"""Zapomni toolset (spec 002): add_memory, search_memory, get_stats, in spec 002's models, and phase 2's
get_related over the caller's knowledge graph (the graph toolset's)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult, TextContent
from pydantic import Field

from domain.errors import MemtroveError, ValidationError
from domain.graph.usecases import KnowledgeGraph
from domain.zapomni.usecases import MAX_QUERY, MAX_TEXT, AddMemory, GetStats, SearchMemory
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool

GRAPH_NAME = "memtrove (a knowledge graph per caller, the graph toolset; hybrid vector + BM25 index)"


def failure(exc: MemtroveError) -> CallToolResult:
    """``status: error`` with the message (and the field, for bad input); isError set."""
    body: dict[str, Any] = {"status": "error", "error": exc.message}
    if isinstance(exc, ValidationError):
        body["field"] = exc.field
    return CallToolResult(content=[TextContent(type="text", text=f"Error: {exc.message}")], structured_content=body,
                          is_error=True)


class ZapomniTools(Toolbox):
    toolset = "zapomni"
    failure = staticmethod(failure)

    @tool("Remember a text (chunked and indexed when large). Metadata: tags (list), source, date (ISO-8601) and "
          "any other JSON values.", writes=True)
    def add_memory(self, text: Annotated[str, Field(description="Text to remember, up to 10 MB (UTF-8)",
                                                    min_length=1, max_length=MAX_TEXT)],
                   metadata: Annotated[dict[str, Any] | None, Field(description="Optional: tags, source, date, ...")]
                   = None) -> CallToolResult:
        added = self.use(AddMemory)()(text, metadata)
        preview = text.strip()[:100]
        said = ("Memory already being added by another call (searchable when complete)" if added.pending
                and added.duplicate else "Memory being stored (searchable when complete)" if added.pending else
                "Memory already stored" if added.duplicate else "Memory stored")
        return render.ok({"status": "success", "memory_id": added.memory_id, "chunks_created": added.chunks_created,
                          "text_preview": preview, "duplicate": added.duplicate, "error": None},
                         f"{said}. ID: {added.memory_id}, Chunks: {added.chunks_created}")

    @tool("Search remembered texts by meaning and words; filters: date_from, date_to, tags, source.",
          annotations=READ_ONLY)
    def search_memory(self, query: Annotated[str, Field(description="Search query", min_length=1,
                                                        max_length=MAX_QUERY)],
                      limit: Annotated[int, Field(description="Max results", ge=1, le=100)] = 10,
                      filters: Annotated[dict[str, Any] | None, Field(
                          description="Optional: date_from, date_to (ISO-8601), tags (all of), source")] = None,
                      ) -> CallToolResult:
        found = self.use(SearchMemory)()(query, limit, filters)
        results = [{"memory_id": p.artifact.id, "text": p.text, "similarity_score": min(1.0, max(0.0, p.similarity)),
                    "tags": list(p.artifact.labels.get("tags") or []), "source": p.artifact.labels.get("source") or "",
                    "timestamp": p.artifact.ts} for p in found]
        lines = [f"{n}. [{r['similarity_score']:.3f}] {render.preview(r['text'], 100)} ({r['memory_id']})"
                 for n, r in enumerate(results, start=1)]
        return render.ok({"status": "success", "count": len(results), "results": results, "error": None},
                         "\n".join([f"Found {len(results)} results:", *lines]))

    @tool("Statistics: memories, chunks, database size, average search latency.", annotations=READ_ONLY)
    def get_stats(self) -> CallToolResult:
        s = self.use(GetStats)()()
        stats = {"total_memories": s.total_memories, "total_chunks": s.total_chunks,
                 "database_size_mb": s.database_size_mb, "graph_name": GRAPH_NAME, "cache_hit_rate": None,
                 "avg_query_latency_ms": s.avg_query_latency_ms}
        latency = f"{s.avg_query_latency_ms:.1f} ms" if s.avg_query_latency_ms is not None else "n/a"
        return render.ok({"status": "success", "statistics": stats, "error": None},
                         f"Stats: {s.total_memories} memories, {s.total_chunks} chunks, {s.database_size_mb} MB, "
                         f"average query latency {latency}")

    @tool("Entities related to one in your knowledge graph (the graph toolset's), within depth 1-3 relations "
          "either way: nearest first, then the most connected; each with the relations that lead to it.",
          annotations=READ_ONLY)
    def get_related(self, entity: Annotated[str, Field(description="The entity's name")],
                    depth: Annotated[int, Field(description="Relations to follow, 1-3")] = 1,
                    relation_types: Annotated[list[str] | None, Field(
                        description="Follow only these relation types")] = None,
                    limit: Annotated[int, Field(description="Max related entities, 1-100")] = 20) -> CallToolResult:
        found = self.use(KnowledgeGraph)().related(entity, depth, relation_types, limit)
        related = [{"name": r.name, "entity_type": r.entity.entity_type if r.entity else None, "depth": r.depth,
                    "connections": r.links, "observations": list(r.entity.observations) if r.entity else [],
                    "path": [{"from": p.source, "to": p.target, "relation_type": p.relation_type} for p in r.path]}
                   for r in found]
        lines = [f"{n}. {r['name']} (depth {r['depth']}: " + ", ".join(
            f"{p['from']} {p['relation_type']} {p['to']}" for p in r["path"]) + ")"
                 for n, r in enumerate(related, start=1)]
        return render.ok({"status": "success", "entity": entity, "count": len(related), "related": related,
                          "error": None}, "\n".join([f"Found {len(related)} related to {entity}:", *lines]))
