"""Core toolset: hybrid search over everything stored (spec 000 §9, spec 004's fusion)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.model import Hit
from domain.search.usecases import HybridSearch, SearchRequest
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool
from entrypoints.mcp.tooling import AsOf, Mode, PerArtifact, Profile


class SearchTools(Toolbox):
    toolset = "core"

    @tool("Search artifacts and chunks (and on request memories and history) at once; in each, meaning "
          "(vectors), words (BM25) and exact tokens are fused by weighted reciprocal rank fusion; the best "
          "passages with provenance, up to per_artifact per document.", annotations=READ_ONLY)
    def hybrid_search(
        self,
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-50")] = 5,
        include_memory: Annotated[bool, Field(
            description="Also search memories (with the entities you wrote with the graph tools)")] = False,
        include_history: Annotated[bool, Field(description="Also search conversation history")] = False,
        expand_neighbors: Annotated[bool, Field(description="Include the chunks before and after")] = False,
        filters: Annotated[dict[str, Any] | None, Field(
            description="Optional: artifact_type, source_system, sensitivity, visibility_scope, "
                        "time_range_start, time_range_end, conversation_id; scope of session memories: "
                        "session_id, session_iter, agent_id, task_code, memory_type, category, title, source, tags; "
                        "of project documents: project, kind, canonical_key, doc_class, pinned, status")] = None,
        mode: Mode = "hybrid",
        profile: Profile = None,
        per_artifact: PerArtifact = None,
        as_of: AsOf = None,
    ) -> CallToolResult:
        notes: list[str] = []
        outcome = self.use(HybridSearch)()(SearchRequest(query, limit, filters, include_memory, include_history,
                                                   expand_neighbors, mode, profile,
                                                   per_artifact=per_artifact, as_of=as_of), notes)
        hits = outcome.hits
        return render.warned({"query": query, "count": len(hits), "searched": outcome.searched,
                              "results": [render.hit(h) for h in hits]}, render_results(hits, outcome.searched), notes)


def render_results(hits: list[Hit], searched: list[str] | None) -> str:
    """Spec 000 §12.2's hybrid_search format: a hit's snippet, or its passage with neighbours when asked for."""
    head = f"Found {len(hits)} results" + (f" (searched: {', '.join(searched)})" if searched else "") + ":"
    blocks = [head]
    for rank, h in enumerate(hits, start=1):
        source = f" (from: {', '.join(h.fields['collections'])})" if "collections" in h.fields else ""
        at = f" | Characters: {h.fields['start_char']}-{h.fields['end_char']}" if "start_char" in h.fields else ""
        lines = [f"[{rank}] RRF score: {h.score:.4f}{source}", f"Type: {h.type} | ID: {h.id}{at}"]
        prov = h.fields.get("provenance") or {}
        if prov.get("title"):
            lines.append(f"Title: {prov['title']}")
        if h.type in ("artifact", "chunk"):
            lines.append(f"Source: {prov.get('source_system')} | Sensitivity: {h.fields.get('sensitivity')}")
        if h.fields.get("indexing"):
            lines.append("Indexing: found by its words; its meaning is still being indexed")
        if h.fields.get("expanded"):
            lines.append("Content with neighbors:\n" + h.content)
        else:
            lines.append(f'Snippet: "{render.shown_text(h)}"')
        if prov.get("source_url"):
            lines.append(f"Evidence: {prov['source_url']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
