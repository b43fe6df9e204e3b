"""MCP tools for artifacts and hybrid search: validate, call one use case, render."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from domain.model import ARTIFACT_TYPES, RETENTION_POLICIES, SENSITIVITIES, VISIBILITY_SCOPES, Hit, IngestJob
from domain.artifacts.input import IngestRequest
from domain.artifacts.ingest import IngestResult
from domain.search.usecases import SearchRequest
from entrypoints.mcp import render
from entrypoints.mcp.long_calls import StillRunning, run_long
from entrypoints.mcp.tooling import Mode, PerArtifact, Profile
from entrypoints.runtime import Runtime

Register = Callable[..., Callable[[Callable[..., Any]], Any]]
RunTool = Callable[..., CallToolResult]


def _enum(values: tuple[str, ...], nullable: bool = False) -> dict[str, Any]:
    return {"enum": [*values, None] if nullable else list(values)}


def register_artifact_tools(runtime: Runtime, tool: Register, run_tool: RunTool,
                            read_only: ToolAnnotations) -> None:
    uc = runtime.app.use_cases

    @tool("Ingest a document, email, chat or transcript: chunked, embedded and indexed with provenance. "
          "Re-ingesting the same source with the same content changes nothing; new content replaces it.")
    def artifact_ingest(
        artifact_type: Annotated[str, Field(description="email, doc, chat, transcript or note",
                                            json_schema_extra=_enum(ARTIFACT_TYPES))],
        source_system: Annotated[str, Field(description="Origin system (gmail, slack, drive, manual...), 1-100 chars")],
        content: Annotated[str, Field(description="Full text, up to 10 MB")],
        source_id: Annotated[str | None, Field(description="Unique ID in the source system, 1-500 chars")] = None,
        source_url: Annotated[str | None, Field(description="Link to the original")] = None,
        title: Annotated[str | None, Field(description="Subject or title, 1-500 chars")] = None,
        author: Annotated[str | None, Field(description="Primary author, 1-200 chars")] = None,
        participants: Annotated[list[str] | None, Field(description="All participants, at most 100")] = None,
        ts: Annotated[str | None, Field(description="When it happened, ISO-8601 (default: now)")] = None,
        sensitivity: Annotated[str, Field(description="normal, sensitive or highly_sensitive",
                                          json_schema_extra=_enum(SENSITIVITIES))] = "normal",
        visibility_scope: Annotated[str, Field(description="me, team, org or custom",
                                               json_schema_extra=_enum(VISIBILITY_SCOPES))] = "me",
        retention_policy: Annotated[str, Field(description="forever, 1y, until_resolved or custom",
                                               json_schema_extra=_enum(RETENTION_POLICIES))] = "forever",
        chunker: Annotated[str | None, Field(
            description="auto (by type and content), token-window, markdown, rst, email, chat, code or a plugin's "
                        "chunker (default: the server's, normally auto)")] = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            request = IngestRequest(artifact_type, source_system, content, source_id, source_url, title, author,
                                    participants, ts, sensitivity, visibility_scope, retention_policy, chunker)
            ingest = uc.ingest_artifact()
            result = run_long(runtime, ctx, lambda progress: ingest(request, progress),
                              runtime.settings.memtrove_call_budget)
            runtime.kick()
            if isinstance(result, StillRunning):
                return render_indexing(result)
            return render_ingest(result)
        return run_tool(runtime, "artifact_ingest", act)

    @tool("Search artifacts at passage level by meaning and by words (fused); the best passages, up to "
          "per_artifact per document (default 3; 1: each document's best chunk).", read_only)
    def artifact_search(
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-50")] = 5,
        artifact_type: Annotated[str | None, Field(description="Filter by type",
                                                   json_schema_extra=_enum(ARTIFACT_TYPES, True))] = None,
        source_system: Annotated[str | None, Field(description="Filter by source system")] = None,
        sensitivity: Annotated[str | None, Field(description="Filter by sensitivity",
                                                 json_schema_extra=_enum(SENSITIVITIES, True))] = None,
        visibility_scope: Annotated[str | None, Field(description="Filter by visibility",
                                                      json_schema_extra=_enum(VISIBILITY_SCOPES, True))] = None,
        time_range_start: Annotated[str | None, Field(description="Only artifacts at or after this ISO-8601 time")] = None,
        time_range_end: Annotated[str | None, Field(description="Only artifacts at or before this ISO-8601 time")] = None,
        expand_neighbors: Annotated[bool, Field(description="Include the chunks before and after")] = False,
        mode: Mode = "hybrid",
        profile: Profile = None,
        per_artifact: PerArtifact = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            hits = uc.artifact_search()(query, limit, expand_neighbors, mode=mode, profile=profile,
                                        per_artifact=per_artifact,
                                        artifact_type=artifact_type,
                                        source_system=source_system, sensitivity=sensitivity,
                                        visibility_scope=visibility_scope, time_range_start=time_range_start,
                                        time_range_end=time_range_end)
            return render.ok({"query": query, "count": len(hits), "results": [render.hit(h) for h in hits]},
                             render_results(hits, None))
        return run_tool(runtime, "artifact_search", act)

    @tool("Get an artifact's metadata, and on request its exact content and chunk list.", read_only)
    def artifact_get(
        artifact_id: Annotated[str, Field(description="Artifact ID, starts with 'art_'")],
        include_content: Annotated[bool, Field(description="Return the full original content")] = False,
        include_chunks: Annotated[bool, Field(description="Return the chunk list")] = False,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            view = uc.get_artifact()(artifact_id, include_content, include_chunks)
            a = view.artifact
            if a is None:  # only an ingest under way (or failed) is known of it
                job = view.job
                assert job is not None
                return render.ok({"artifact_id": job.artifact_id, **job_status(job)},
                                 f"Artifact {job.artifact_id}: {job_text(job)}")
            meta = {"artifact_type": a.artifact_type, "source_system": a.source_system, "source_id": a.source_id,
                    "source_url": a.source_url, "title": a.title, "author": a.author,
                    "participants": list(a.participants), "ts": a.ts, "content_hash": a.content_hash,
                    "token_count": a.token_count, "is_chunked": a.is_chunked, "num_chunks": a.num_chunks,
                    "ingested_at": a.ingested_at, "chunker": a.chunker, "chunker_version": a.chunker_version,
                    **a.privacy(), **a.profile.as_metadata()}
            body: dict[str, Any] = {"artifact_id": a.id, "status": "indexed", "metadata": meta}
            if view.job is not None:
                body["new_version"] = job_status(view.job)
            if view.content is not None:
                body["content"] = view.content
            if view.chunks is not None:
                body["chunks"] = [{"chunk_id": c.id, "chunk_index": c.index, "start_char": c.start_char,
                                   "end_char": c.end_char, "token_count": c.token_count,
                                   "content_hash": c.content_hash, "metadata": c.metadata} for c in view.chunks]
            text = f"Artifact {a.id} ({a.artifact_type} from {a.source_system}): {a.title or 'untitled'}, " \
                   f"{a.token_count} tokens, {a.num_chunks if a.is_chunked else 'not'} chunked"
            if view.content is not None:
                text += "\n\n" + view.content
            return render.ok(body, text)
        return run_tool(runtime, "artifact_get", act, ready=False)

    @tool("Delete an artifact with all its chunks and vectors.",
          ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    def artifact_delete(
        artifact_id: Annotated[str, Field(description="Artifact ID, starts with 'art_'")],
    ) -> CallToolResult:
        def act() -> CallToolResult:
            count = uc.delete_artifact()(artifact_id)
            runtime.kick()
            return render.ok({"artifact_id": artifact_id, "deleted": True, "chunks_deleted": count},
                             f"Deleted artifact {artifact_id} and {count} chunks")
        return run_tool(runtime, "artifact_delete", act)

    @tool("Search artifacts and chunks (and on request memories and history) at once; in each, meaning "
          "(vectors), words (BM25) and exact tokens are fused by weighted reciprocal rank fusion; the best "
          "passages with provenance, up to per_artifact per document.", read_only)
    def hybrid_search(
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-50")] = 5,
        include_memory: Annotated[bool, Field(description="Also search memories")] = False,
        include_history: Annotated[bool, Field(description="Also search conversation history")] = False,
        expand_neighbors: Annotated[bool, Field(description="Include the chunks before and after")] = False,
        filters: Annotated[dict[str, Any] | None, Field(
            description="Optional: artifact_type, source_system, sensitivity, visibility_scope, "
                        "time_range_start, time_range_end, conversation_id")] = None,
        mode: Mode = "hybrid",
        profile: Profile = None,
        per_artifact: PerArtifact = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            outcome = uc.hybrid_search()(SearchRequest(query, limit, filters, include_memory, include_history,
                                                       expand_neighbors, mode, profile,
                                                       per_artifact=per_artifact))
            hits = outcome.hits
            return render.ok({"query": query, "count": len(hits), "searched": outcome.searched,
                              "results": [render.hit(h) for h in hits]}, render_results(hits, outcome.searched))
        return run_tool(runtime, "hybrid_search", act)


def render_ingest(result: IngestResult) -> CallToolResult:
    a = result.artifact
    if a is None and result.job is not None:  # another worker is still cutting it into chunks
        return render.ok({"artifact_id": result.job.artifact_id, **job_status(result.job)},
                         f"Artifact {result.job.artifact_id} is being ingested elsewhere: {job_text(result.job)}")
    assert a is not None
    body: dict[str, Any] = {
        "artifact_id": a.id, "status": result.status, "is_chunked": a.is_chunked, "num_chunks": a.num_chunks,
        "token_count": a.token_count, "content_hash": a.content_hash, "chunker": a.chunker,
        "chunker_version": a.chunker_version, **stored_ids(result.stored_ids), **a.profile.as_metadata()}
    if result.job is not None:
        body.update(job_status(result.job))
        return render.ok(body, f"Artifact {a.id} is being ingested elsewhere: {job_text(result.job)}")
    verb = {"ingested": "Ingested", "replaced": "Replaced", "unchanged": "Unchanged (same content)"}
    chunked = f"{a.num_chunks} chunks" if a.is_chunked else "stored whole"
    if body["stored_ids_omitted"]:
        chunked += " (artifact_get with include_chunks lists them)"
    return render.ok(body, f"{verb[result.status]} artifact {a.id}: {a.token_count} tokens, {chunked}")


LISTED_CHUNK_IDS = 3


def stored_ids(ids: list[str]) -> dict[str, Any]:
    """Spec 000's ``stored_ids``, kept short: the artifact id and its first chunk ids (a 10 MB document
    has thousands); ``stored_ids_omitted`` counts the rest, which artifact_get(include_chunks) lists."""
    shown = ids[: 1 + LISTED_CHUNK_IDS]
    return {"stored_ids": shown, "stored_ids_omitted": len(ids) - len(shown)}


def render_indexing(running: StillRunning[IngestResult]) -> CallToolResult:
    """The call's budget ran out: the ingest goes on in the background (and survives a restart)."""
    if running.latest is None:
        return render.ok({"status": "indexing"}, "Still preparing the artifact; it goes on in the background.")
    art_id, done, total = running.latest
    body = {"artifact_id": art_id, "status": "indexing", "chunks_done": done, "chunks_total": total}
    where = f"{done} of {total} chunks embedded" if total else "cutting it into chunks"
    return render.ok(body, f"Indexing artifact {art_id} in the background: {where}. "
                           "It becomes searchable when complete; artifact_get shows its progress.")


def job_status(job: IngestJob) -> dict[str, Any]:
    status = {"status": job.status, "version": job.version, "chunks_done": job.done, "chunks_total": job.total}
    return {**status, "error": job.error} if job.error else status


def job_text(job: IngestJob) -> str:
    if job.status == "failed":
        return f"ingest failed: {job.error}"
    if not job.total:
        return "indexing: cutting it into chunks; searchable when complete"
    return f"indexing, {job.done} of {job.total} chunks embedded; searchable when complete"


def render_results(hits: list[Hit], searched: list[str] | None) -> str:
    """Spec 000 §12.2's hybrid_search format: a hit's snippet, or its passage with neighbours when asked for."""
    head = f"Found {len(hits)} results" + (f" (searched: {', '.join(searched)})" if searched else "") + ":"
    blocks = [head]
    for rank, h in enumerate(hits, start=1):
        source = f" (from: {', '.join(h.fields['collections'])})" if "collections" in h.fields else ""
        lines = [f"[{rank}] RRF score: {h.score:.4f}{source}", f"Type: {h.type} | ID: {h.id}"]
        prov = h.fields.get("provenance") or {}
        if prov.get("title"):
            lines.append(f"Title: {prov['title']}")
        if h.type in ("artifact", "chunk"):
            lines.append(f"Source: {prov.get('source_system')} | Sensitivity: {h.fields.get('sensitivity')}")
        if h.fields.get("expanded"):
            lines.append("Content with neighbors:\n" + h.content)
        else:
            lines.append(f'Snippet: "{render.shown_text(h)}"')
        if prov.get("source_url"):
            lines.append(f"Evidence: {prov['source_url']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def register_reembed_tool(runtime: Runtime, tool: Register, run_tool: RunTool) -> None:
    uc = runtime.app.use_cases

    @tool("Re-embed one artifact, or everything (artifacts, memories, history), with another embedder into "
          "that profile's own index. Searches keep using the active profile; once everything is re-embedded, "
          "restart with MEMTROVE_EMBEDDER set to the target to switch.")
    def artifact_reembed(
        target_embedder: Annotated[str, Field(description="local, openai or openai-compatible (model settings "
                                                          "from the OPENAI_* variables)",
                                              json_schema_extra=_enum(("local", "openai", "openai-compatible")))],
        artifact_id: Annotated[str | None, Field(description="Only this artifact (default: everything)")] = None,
    ) -> CallToolResult:
        def act() -> CallToolResult:
            report = uc.reembed(target_embedder=target_embedder)(artifact_id)
            p = report.target
            body = {"target_profile": {"provider": p.provider, "model": p.model, "dimensions": p.dimensions},
                    "artifacts": report.artifacts, "memories": report.memories, "turns": report.turns,
                    "skipped_unchanged": report.skipped, "complete": report.complete}
            text = (f"Re-embedded {report.artifacts} artifacts, {report.memories} memories and {report.turns} "
                    f"turns into {p.provider}/{p.model}/{p.dimensions}d ({report.skipped} already current).")
            if report.complete:
                body["next_step"] = f"restart with MEMTROVE_EMBEDDER={target_embedder} to search with it"
                text += " Complete: " + body["next_step"] + "."
            return render.ok(body, text)
        return run_tool(runtime, "artifact_reembed", act)
