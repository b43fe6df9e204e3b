"""Core toolset: artifacts (spec 000 §8): ingest with provenance, passage search, exact retrieval, delete."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from domain.model import ARTIFACT_TYPES, SENSITIVITIES, VISIBILITY_SCOPES, IngestJob
from domain.artifacts.input import IngestRequest
from domain.artifacts.ingest import IngestResult
from domain.artifacts.ingest import IngestArtifact
from domain.upkeep.retention import ResolveArtifact
from domain.artifacts.usecases import DeleteArtifact, GetArtifact
from domain.search.usecases import ArtifactSearch
from entrypoints.mcp import render
from entrypoints.mcp.long_calls import StillRunning, run_long
from entrypoints.mcp.tooling import (
    Mode, PerArtifact, Profile, Retention, RetentionDays, Sensitivity, Visibility, VisibleTo,
)
from entrypoints.mcp.toolkit import DESTRUCTIVE, READ_ONLY, Toolbox, tool
from entrypoints.mcp.toolsets.search import render_results


def enum(values: tuple[str, ...], nullable: bool = False) -> dict[str, Any]:
    return {"enum": [*values, None] if nullable else list(values)}


class ArtifactTools(Toolbox):
    toolset = "core"

    @tool("Ingest a document, email, chat or transcript: chunked, embedded and indexed with provenance. "
          "Re-ingesting the same source with the same content changes nothing; new content replaces it.",
          writes=True)
    def artifact_ingest(
        self,
        artifact_type: Annotated[str, Field(description="email, doc, chat, transcript or note",
                                            json_schema_extra=enum(ARTIFACT_TYPES))],
        source_system: Annotated[str, Field(description="Origin system (gmail, slack, drive, manual...), 1-100 chars")],
        content: Annotated[str, Field(description="Full text, up to 10 MB")],
        source_id: Annotated[str | None, Field(description="Unique ID in the source system, 1-500 chars")] = None,
        source_url: Annotated[str | None, Field(description="Link to the original")] = None,
        title: Annotated[str | None, Field(description="Subject or title, 1-500 chars")] = None,
        author: Annotated[str | None, Field(description="Primary author, 1-200 chars")] = None,
        participants: Annotated[list[str] | None, Field(description="All participants, at most 100")] = None,
        ts: Annotated[str | None, Field(description="When it happened, ISO-8601 (default: now)")] = None,
        sensitivity: Sensitivity = "normal",
        visibility_scope: Visibility = "me",
        retention_policy: Retention = "forever",
        chunker: Annotated[str | None, Field(
            description="auto (by type and content), token-window, markdown, rst, email, chat, code or a plugin's "
                        "chunker (default: the server's, normally auto)")] = None,
        visible_to: VisibleTo = None,
        retention_days: RetentionDays = None,
        ctx: Context | None = None,
    ) -> CallToolResult:
        request = IngestRequest(artifact_type, source_system, content, source_id, source_url, title, author,
                                participants, ts, sensitivity, visibility_scope, retention_policy, chunker,
                                visible_to=visible_to, retention_days=retention_days)
        ingest = self.use(IngestArtifact)()
        result = run_long(self.runtime, ctx, lambda progress: ingest(request, progress),
                          self.runtime.settings.memtrove_call_budget)
        if isinstance(result, StillRunning):
            return render_indexing(result)
        return render_ingest(result)

    @tool("Search artifacts at passage level by meaning and by words (fused); the best passages, up to "
          "per_artifact per document (default 3; 1: each document's best chunk).", annotations=READ_ONLY)
    def artifact_search(
        self,
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-50")] = 5,
        artifact_type: Annotated[str | None, Field(description="Filter by type",
                                                   json_schema_extra=enum(ARTIFACT_TYPES, True))] = None,
        source_system: Annotated[str | None, Field(description="Filter by source system")] = None,
        sensitivity: Annotated[str | None, Field(description="Filter by sensitivity",
                                                 json_schema_extra=enum(SENSITIVITIES, True))] = None,
        visibility_scope: Annotated[str | None, Field(description="Filter by visibility",
                                                      json_schema_extra=enum(VISIBILITY_SCOPES, True))] = None,
        time_range_start: Annotated[str | None, Field(description="Only artifacts at or after this ISO-8601 time")] = None,
        time_range_end: Annotated[str | None, Field(description="Only artifacts at or before this ISO-8601 time")] = None,
        expand_neighbors: Annotated[bool, Field(description="Include the chunks before and after")] = False,
        mode: Mode = "hybrid",
        profile: Profile = None,
        per_artifact: PerArtifact = None,
    ) -> CallToolResult:
        notes: list[str] = []
        hits = self.use(ArtifactSearch)()(query, limit, expand_neighbors, mode=mode, profile=profile,
                                    per_artifact=per_artifact, notes=notes,
                                    artifact_type=artifact_type,
                                    source_system=source_system, sensitivity=sensitivity,
                                    visibility_scope=visibility_scope, time_range_start=time_range_start,
                                    time_range_end=time_range_end)
        return render.warned({"query": query, "count": len(hits), "results": [render.hit(h) for h in hits]},
                             render_results(hits, None), notes)

    @tool("Get an artifact's metadata, and on request its exact content and chunk list.", annotations=READ_ONLY,
          needs_store=False)
    def artifact_get(
        self,
        artifact_id: Annotated[str, Field(description="Artifact ID, starts with 'art_'")],
        include_content: Annotated[bool, Field(description="Return the full original content")] = False,
        include_chunks: Annotated[bool, Field(description="Return the chunk list")] = False,
    ) -> CallToolResult:
        view = self.use(GetArtifact)()(artifact_id, include_content, include_chunks)
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
        switch = self.runtime.switch
        if switch is not None and switch.state == "re-embedding":  # its vectors of the model to come, yet?
            body["model_switch"] = switch.of_artifact(self.runtime.app.adapters.store(), a.id, a.version)
        if view.content is not None:
            body["content"] = view.content
        if view.chunks is not None:
            body["chunks"] = [{"chunk_id": c.id, "chunk_index": c.index, "start_char": c.start_char,
                               "end_char": c.end_char, "token_count": c.token_count,
                               "content_hash": c.content_hash, "metadata": c.metadata} for c in view.chunks]
        pieces = ("stored whole" if not a.is_chunked else
                  f"in {a.num_chunks} {'chunk' if a.num_chunks == 1 else 'chunks'}")  # not "8 chunked"
        text = f"Artifact {a.id} ({a.artifact_type} from {a.source_system}): {a.title or 'untitled'}, " \
               f"{a.token_count} tokens, {pieces}"
        if view.content is not None:
            text += "\n\n" + view.content
        return render.ok(body, text)

    @tool("Delete an artifact with all its chunks and vectors.", annotations=DESTRUCTIVE, writes=True)
    def artifact_delete(
        self,
        artifact_id: Annotated[str, Field(description="Artifact ID, starts with 'art_'")],
    ) -> CallToolResult:
        count = self.use(DeleteArtifact)()(artifact_id)
        return render.ok({"artifact_id": artifact_id, "deleted": True, "chunks_deleted": count},
                         f"Deleted artifact {artifact_id} and {count} chunks")

    @tool("Resolve an artifact kept until_resolved: it expires now (removed everywhere, audited).",
          annotations=DESTRUCTIVE, writes=True)
    def artifact_resolve(
        self,
        artifact_id: Annotated[str, Field(description="Artifact ID, starts with 'art_'")],
    ) -> CallToolResult:
        self.use(ResolveArtifact)()(artifact_id)
        return render.ok({"artifact_id": artifact_id, "resolved": True}, f"Resolved and removed artifact {artifact_id}")


def render_ingest(result: IngestResult) -> CallToolResult:
    a = result.artifact
    if a is None and result.job is not None:  # another worker is still cutting it into chunks
        return render.ok({"artifact_id": result.job.artifact_id, **job_status(result.job)},
                         f"Artifact {result.job.artifact_id} is being ingested elsewhere: {job_text(result.job)}")
    assert a is not None
    body: dict[str, Any] = {
        "artifact_id": a.id, "status": result.status, "is_chunked": a.is_chunked, "num_chunks": a.num_chunks,
        "token_count": a.token_count, "content_hash": a.content_hash, "chunker": a.chunker,
        "chunker_version": a.chunker_version, **stored_ids(result.stored_ids), **a.profile.as_metadata(),
        **render.privacy(a), **render.unreadable(a)}
    if result.job is not None:
        body.update(job_status(result.job))
        return render.ok(body, f"Artifact {a.id} is being ingested elsewhere: {job_text(result.job)}")
    verb = {"ingested": "Ingested", "replaced": "Replaced", "unchanged": "Unchanged (same content)"}
    chunked = f"{a.num_chunks} chunks" if a.is_chunked else "stored whole"
    if body["stored_ids_omitted"]:
        chunked += " (artifact_get with include_chunks lists them)"
    return render.ok(body, f"{verb[result.status]} artifact {a.id}: {a.token_count} tokens, {chunked}"
                           f"{render.written_note(a)}")


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
    return render.ok(body, f"Indexing artifact {art_id} in the background: {where}. A new document is found "
                           "by its words once cut, by meaning when complete (a new version of a stored one "
                           "replaces it then); artifact_get shows its progress.")


def job_status(job: IngestJob) -> dict[str, Any]:
    status = {"status": job.status, "version": job.version, "chunks_done": job.done, "chunks_total": job.total}
    return {**status, "error": job.error} if job.error else status


def job_text(job: IngestJob) -> str:
    if job.status == "failed":
        return f"ingest failed: {job.error}"
    if not job.total:
        return "indexing: cutting it into chunks; found by its words once cut, by meaning when complete"
    return f"indexing, {job.done} of {job.total} chunks embedded; found by its words now, by meaning when complete"
