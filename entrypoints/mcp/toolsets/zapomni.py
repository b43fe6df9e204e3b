"""Zapomni toolset (spec 002): add_memory, search_memory, get_stats, in spec 002's models, and phase 2's
knowledge graph tools over the caller's graph (the graph toolset's): build_graph (extraction from what
the caller stored, in the background with progress), graph_status, get_related (with each edge's
evidence) and unmerge_entity."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from domain.errors import MemtroveError, NotFoundError
from domain.graph.build import BuildGraph, GraphStatus, release
from domain.graph.follow import FollowGraph
from domain.graph.model import Evidence, GraphBuild, Relation
from domain.graph.usecases import KnowledgeGraph
from domain.zapomni.usecases import MAX_QUERY, MAX_TEXT, AddMemory, GetStats, SearchMemory
from entrypoints.mcp import render
from entrypoints.mcp.long_calls import StillRunning, run_long
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool

MERGES_SHOWN = 50
GRAPH_NAME = "memtrove (a knowledge graph per caller, the graph toolset; hybrid vector + BM25 index)"


def failure(exc: MemtroveError) -> CallToolResult:
    """``status: error`` with the message (and the field, for bad input); isError set."""
    body: dict[str, Any] = {"status": "error", "error": exc.message}
    if exc.field is not None:
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

    @tool("Search texts remembered with add_memory by meaning and words; filters: date_from, date_to, tags, "
          "source. memory_store memories: memory_search; everything at once: hybrid_search.",
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

    @tool("Statistics of add_memory texts: memories, chunks, database size, average search latency. The "
          "whole store (memories, conversations, documents): store_stats.", annotations=READ_ONLY)
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
                    limit: Annotated[int, Field(description="Max related entities, 1-100")] = 20,
                    include_ended: Annotated[bool, Field(description="Also follow facts a later one replaced "
                                                                     "(e.g. a former home)")] = False,
                    ) -> CallToolResult:
        found = self.use(KnowledgeGraph)().related(entity, depth, relation_types, limit, include_ended)
        related = [{"name": r.name, "entity_type": r.entity.entity_type if r.entity else None, "depth": r.depth,
                    "connections": r.links, "observations": list(r.entity.observations) if r.entity else [],
                    "path": [{"from": p.source, "to": p.target, "relation_type": p.relation_type,
                              "evidence": [evidence(e) for e in (r.evidence[i] if i < len(r.evidence) else ())],
                              **ended(r.ended[i] if i < len(r.ended) else None)}
                             for i, p in enumerate(r.path)]}
                   for r in found]
        lines = [f"{n}. {r['name']} (depth {r['depth']}: " + ", ".join(
            f"{p['from']} {p['relation_type']} {p['to']}" for p in r["path"]) + ")"
                 for n, r in enumerate(related, start=1)]
        return render.ok({"status": "success", "entity": entity, "count": len(related), "related": related,
                          "error": None}, "\n".join([f"Found {len(related)} related to {entity}:", *lines]))

    @tool("Build your knowledge graph from what you stored (memories, conversation turns, document chunks): "
          "entities, relations and observations extracted, names merged, in the background with progress. "
          "Incremental: a second run reads only what changed. See graph_status.", writes=True)
    def build_graph(self, kinds: Annotated[list[str] | None, Field(
                        description="Read only these: memory, turn, artifact (default: all)")] = None,
                    source: Annotated[str | None, Field(
                        description="Only an artifact source system, a conversation id or a memory type")] = None,
                    since: Annotated[str | None, Field(description="Only records from this ISO-8601 date")] = None,
                    until: Annotated[str | None, Field(description="Only records up to this ISO-8601 date")] = None,
                    ctx: Context | None = None) -> CallToolResult:
        build = self.use(BuildGraph)()
        started = build.start(kinds, source, since, until)  # recorded before the run: its id is known now
        began: list[bool] = []

        def work(progress: Any) -> GraphBuild:
            began.append(True)
            return build.run(started, progress)  # releases the caller's build slot when it ends

        try:
            result = run_long(self.runtime, ctx, work, self.runtime.settings.memtrove_call_budget, unit="records read")
        except Exception:
            if not began:  # the run was never handed to the background: nothing else releases its slot
                release(started.build)
            raise
        if isinstance(result, StillRunning):
            done, total = (result.latest[1], result.latest[2]) if result.latest else (0, 0)
            body = {"status": "running", "build_id": started.build.id, "processed": done, "total": total,
                    "error": None}
            return render.ok(body, f"Graph build {started.build.id} running: {done} of {total} records read; "
                                   "call graph_status to follow it.")
        return render.ok({"status": "success", **status(result), "error": None}, summary(result))

    @tool("The state of your latest graph build (or of build_id): running, done, failed or interrupted, with "
          "counts, progress, errors and recent name merges.", annotations=READ_ONLY)
    def graph_status(self, build_id: Annotated[str | None, Field(description="A build_graph answer's build_id "
                                                                             "(default: the latest)")] = None,
                     ) -> CallToolResult:
        on = self.runtime.settings.memtrove_graph_background
        background = self.use(FollowGraph)().report() if on else {"enabled": False}
        said = (f" Background graph: {'current' if background['current'] else str(background['behind']) + ' writes to read'}."
                if on else "")
        try:
            found, merges = self.use(GraphStatus)()(build_id)
        except NotFoundError:
            if build_id is not None or not on:
                raise
            return render.ok({"status": "success", "build_id": None, "state": "none", "background": background,
                              "error": None}, "No build_graph run yet; your graph follows your writes." + said)
        merged = [{"alias": a.alias, "entity": a.name, "method": a.method, "score": a.score, "unmerged": a.blocked}
                  for a in merges[:MERGES_SHOWN]]
        return render.ok({"status": "success", **status(found), "merges": merged, "merges_total": len(merges),
                          "background": background, "error": None},
                         summary(found) + f" {len(merges)} names merged." + said)

    @tool("Undo a merge of names in your knowledge graph: what was read under alias becomes its own entity "
          "again, and the two are never merged again.", writes=True)
    def unmerge_entity(self, alias: Annotated[str, Field(description="The merged name")],
                       entity: Annotated[str, Field(description="The entity it was merged into")]) -> CallToolResult:
        moved = self.use(KnowledgeGraph)().unmerge(alias, entity)
        return render.ok({"status": "success", "alias": alias, "entity": entity, "facts_moved": moved, "error": None},
                         f"Unmerged {alias} from {entity}: {moved} facts moved.")


def ended(over: tuple[str, Relation] | None) -> dict[str, Any]:
    """An edge a later fact replaced: until when it held and what replaced it."""
    if over is None:
        return {}
    return {"valid_to": over[0], "superseded_by": {"from": over[1].source, "to": over[1].target,
                                                   "relation_type": over[1].relation_type}}


def evidence(e: Evidence) -> dict[str, Any]:
    return {"record_type": e.kind, "record_id": e.record_id, "chunk_index": e.part if e.part >= 0 else None,
            "mention": e.mention, "excerpt": e.excerpt, "valid_from": e.when}


def status(b: GraphBuild) -> dict[str, Any]:
    return {"build_id": b.id, "state": b.state, "started": b.started, "updated": b.updated, "finished": b.finished,
            "filters": b.filters, "progress": {"processed": b.done, "total": b.total},
            "records_unchanged": b.skipped, "records_forgotten": b.forgotten,
            "extracted": {"entities": b.entities, "relations": b.relations, "observations": b.observations},
            "errors": list(b.errors)}


def summary(b: GraphBuild) -> str:
    text = (f"Graph build {b.id}: {b.state}; {b.done} of {b.total} records read ({b.skipped} unchanged, "
            f"{b.forgotten} forgotten); {b.entities} entity mentions, {b.relations} relations, "
            f"{b.observations} observations.")
    return text + (f" {len(b.errors)} errors, first: {b.errors[0]}" if b.errors else "")
