"""Sessions toolset (spec 001): the utility tools (context, reconstruction, stats, export, cleanup)."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from domain.sessions.upkeep import CleanupOldMemories, DeleteSessionMemory, ExportDocument
from domain.sessions.utility import (ExpandChunk, GetSessionMemory, GetSessionStats, ListSessions, LoadTaskContext,
                                     Reconstruct)
from entrypoints.mcp.toolkit import DESTRUCTIVE, READ_ONLY, tool
from entrypoints.mcp.toolsets import sessions_render as out

MemoryId = Annotated[str, Field(description="Memory identifier (art_...)")]
SessionId = Annotated[str, Field(description="Session identifier")]


class SessionUtilityTools(out.SessionsToolbox):

    @tool("Load what a task continuation needs: the latest session context, the prompts, recent reports and "
          "working memory.", annotations=READ_ONLY)
    def load_session_context_for_task(self, session_id: SessionId,
                                      session_iter: Annotated[str, Field(description="Iteration")]) -> CallToolResult:
        found = self.use(LoadTaskContext)()(session_id, session_iter)
        body = {"session_context": out.memory(found.session_context) if found.session_context else None,
                "input_prompts": [out.memory(m) for m in found.input_prompts],
                "recent_reports": [out.memory(m) for m in found.recent_reports],
                "recent_working_memory": [out.memory(m) for m in found.recent_working_memory]}
        message = (f"Session {session_id} {session_iter}: context {'found' if found.session_context else 'none'}, "
                   f"{len(found.input_prompts)} prompts, {len(found.recent_reports)} reports, "
                   f"{len(found.recent_working_memory)} working memories")
        return out.ok({**body, "message": message}, message)

    @tool("A chunk with the chunks around it, joined.", annotations=READ_ONLY)
    def expand_chunk_context(self, chunk_id: Annotated[str, Field(description="Chunk identifier")],
                             surrounding_chunks: Annotated[int, Field(description="Chunks before and after, 0-20")] = 2,
                             ) -> CallToolResult:
        found = self.use(ExpandChunk)()(chunk_id, surrounding_chunks)
        chunks = [{"chunk_id": c.id, "chunk_index": c.index, "content": c.content,
                   **(out.chunk_fields(c) if c.id != found.artifact.id
                      else out.whole_fields(found.artifact.title, c.content))}
                  for c in found.chunks]
        expanded = "\n\n".join(c.content for c in found.chunks)
        message = f"Chunk {found.target.index} of {found.artifact.id} with {len(chunks) - 1} around it"
        return out.ok({"memory_id": found.artifact.id, "target_chunk_index": found.target.index,
                       "context_window": found.window, "chunks_returned": len(chunks), "expanded_content": expanded,
                       "chunks": chunks, "message": message}, expanded)

    @tool("A memory's full document, rebuilt exactly from its chunks.", annotations=READ_ONLY)
    def reconstruct_document(self, memory_id: MemoryId) -> CallToolResult:
        artifact, content = self.use(Reconstruct)()(memory_id)
        message = f"Reconstructed {artifact.id} from {artifact.num_chunks} chunks ({len(content)} characters)"
        return out.ok({"memory_id": artifact.id, "content": content, "title": artifact.title or "",
                       "memory_type": artifact.labels.get("memory_type"), "chunk_count": artifact.num_chunks,
                       "message": message}, content)

    @tool("One session memory (art_..., written by the store_* tools) by id, whole (its access count goes up). "
          "A memory_store memory (mem_...): memory_get.", annotations=READ_ONLY)
    def get_memory_by_id(self, memory_id: MemoryId) -> CallToolResult:
        found = self.use(GetSessionMemory)()(memory_id)
        return out.ok({"memory": out.memory(found), "message": None}, found.content)

    @tool("Statistics of a session: memories by type and agent, chunks, first and last.", annotations=READ_ONLY)
    def get_session_stats(self, session_id: SessionId) -> CallToolResult:
        s = self.use(GetSessionStats)()(session_id)
        message = f"Session {s.session_id}: {s.total_memories} memories, {s.total_chunks} chunks"
        return out.ok({"session_id": s.session_id, "memory_counts": s.memory_counts, "agent_counts": s.agent_counts,
                       "total_memories": s.total_memories, "total_chunks": s.total_chunks,
                       "earliest_created": s.earliest_created, "latest_created": s.latest_created,
                       "message": message}, message)

    @tool("Recent sessions with their activity, most recent first.", annotations=READ_ONLY)
    def list_sessions(self, limit: Annotated[int, Field(description="Max sessions, 1-100")] = 20,
                      agent_id: Annotated[str | None, Field(description="Only sessions this agent worked in")] = None,
                      ) -> CallToolResult:
        found, total = self.use(ListSessions)()(limit, agent_id)
        sessions = [{"session_id": s.session_id, "agent_id": s.agent_id, "memory_count": s.memory_count,
                     "latest_activity": s.latest_activity, "memory_types": s.memory_types, "agents": s.agents}
                    for s in found]
        lines = [f"{s['session_id']}: {s['memory_count']} memories, last {s['latest_activity']}" for s in sessions]
        return out.ok({"sessions": sessions, "total_sessions": total, "message": None},
                      "\n".join(lines) or "No sessions.")

    @tool("Write a memory's document as Markdown with YAML front matter, under the export directory "
          "(MEMTROVE_EXPORT_DIR); a path leading outside it is refused.", writes=False)
    def write_document_to_file(self, memory_id: MemoryId,
                               output_path: Annotated[str, Field(description="File path relative to the export "
                                                                             "directory")]) -> CallToolResult:
        artifact, written, size = self.use(ExportDocument)()(memory_id, output_path)
        message = f"Wrote {artifact.id} to {written} ({size} bytes)"
        return out.ok({"file_path": written, "memory_id": artifact.id, "bytes_written": size, "message": message},
                      message)

    @tool("Delete a session memory (art_..., written by the store_* tools) with its chunks, vectors and index "
          "entries (cannot be undone). A memory_store memory (mem_...): memory_delete.",
          annotations=DESTRUCTIVE, writes=True)
    def delete_memory(self, memory_id: MemoryId) -> CallToolResult:
        deleted = self.use(DeleteSessionMemory)()(memory_id)
        message = f"Deleted memory {deleted}"
        return out.ok({"memory_id": deleted, "message": message}, message)

    @tool("Delete session memories older than days_old days; a dry run (the default) only counts them.",
          annotations=DESTRUCTIVE, writes=True)
    def cleanup_old_memories(self, days_old: Annotated[int, Field(description="Age in days, 0-36500")] = 90,
                             dry_run: Annotated[bool, Field(description="Only report (default true)")] = True,
                             ) -> CallToolResult:
        r = self.use(CleanupOldMemories)()(days_old, dry_run)
        verb = "Would delete" if r.dry_run else "Deleted"
        message = f"{verb} {r.memories} memories ({r.chunks} chunks) created before {r.cutoff}"
        return out.ok({"memories_deleted": r.memories, "chunks_deleted": r.chunks, "dry_run": r.dry_run,
                       "message": message}, message)
