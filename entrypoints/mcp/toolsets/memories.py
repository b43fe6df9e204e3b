"""Core toolset: durable memories (spec 000 §6)."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from domain.access.privacy import Privacy
from domain.memories.usecases import (DeleteMemory, GetMemory, ListMemories, MemoryHistory, StoreMemory,
                                      StoreMemoryRequest)
from domain.model import MEMORY_TYPES
from domain.search.usecases import SearchMemories, SearchMemoriesRequest
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import DESTRUCTIVE, READ_ONLY, Toolbox, tool
from entrypoints.mcp.tooling import AsOf, Mode, Profile, Retention, RetentionDays, Sensitivity, Visibility, VisibleTo


class MemoryTools(Toolbox):
    toolset = "core"

    @tool("Store a durable memory (preference, fact, project or decision).", writes=True)
    def memory_store(
        self,
        content: Annotated[str, Field(description="Memory content, 1-10000 characters")],
        type: Annotated[str, Field(description="One of: " + ", ".join(MEMORY_TYPES),
                                   json_schema_extra={"enum": list(MEMORY_TYPES)})],
        confidence: Annotated[float, Field(description="Confidence score, 0.0-1.0")],
        conversation_id: Annotated[str | None, Field(description="Optional context, up to 100 characters")] = None,
        sensitivity: Sensitivity = "normal",
        visibility_scope: Visibility = "me",
        retention_policy: Retention = "forever",
        visible_to: VisibleTo = None,
        retention_days: RetentionDays = None,
        supersedes: Annotated[str | None, Field(description="ID of a memory this one replaces")] = None,
        valid_from: Annotated[str | None, Field(description="ISO-8601: holds from then")] = None,
    ) -> CallToolResult:
        privacy = Privacy(sensitivity, visibility_scope, retention_policy, visible_to, retention_days)
        stored = self.use(StoreMemory)()(StoreMemoryRequest(content, type, confidence, conversation_id, privacy,
                                                            supersedes, valid_from))
        return render.ok({**render.memory(stored), **render.unreadable(stored)},
                         f"Stored memory [{stored.id}]: {render.preview(content, 60)}{render.written_note(stored)}")

    @tool("Search memories by meaning and by words (fused); best matches first.", annotations=READ_ONLY)
    def memory_search(
        self,
        query: Annotated[str, Field(description="Search query, 1-500 characters")],
        limit: Annotated[int, Field(description="Max results, 1-20")] = 5,
        min_confidence: Annotated[float, Field(description="Only memories with at least this confidence, 0.0-1.0")] = 0.0,
        mode: Mode = "hybrid",
        profile: Profile = None,
        as_of: AsOf = None,
    ) -> CallToolResult:
        notes: list[str] = []
        hits = self.use(SearchMemories)()(SearchMemoriesRequest(query, limit, min_confidence, mode, profile,
                                                                as_of=as_of), notes)
        text = "\n".join(render.memory_line(h, True) for h in hits) or "No memories found."
        return render.warned({"query": query, "count": len(hits), "results": [render.hit(h) for h in hits]}, text,
                             notes)

    @tool("List the most recent memories, optionally of one type.", annotations=READ_ONLY, needs_store=False)
    def memory_list(
        self,
        type: Annotated[str | None, Field(description="Filter by type: " + ", ".join(MEMORY_TYPES),
                                          json_schema_extra={"enum": [*MEMORY_TYPES, None]})] = None,
        limit: Annotated[int, Field(description="Max results, 1-100")] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page, to read on")] = None,
    ) -> CallToolResult:
        page = self.use(ListMemories)()(type, limit, cursor)
        hits = page.items
        lines = [f"Found {len(hits)} memories:", *(render.memory_line(h, False) for h in hits)]
        if page.next_cursor:
            lines.append(f"More: call again with cursor={page.next_cursor}")
        return render.ok({"count": len(hits), "results": [render.hit(h, ranked=False) for h in hits],
                          "next_cursor": page.next_cursor}, "\n".join(lines))

    @tool("Read one memory whole by id (a search shows long ones cut).", annotations=READ_ONLY, needs_store=False)
    def memory_get(
        self,
        memory_id: Annotated[str, Field(description="Memory ID, starts with 'mem_'")],
    ) -> CallToolResult:
        found = self.use(GetMemory)()(memory_id)
        return render.ok(render.hit(found, ranked=False), f"[{found.id}] ({found.fields['memory_type']}, "
                                            f"conf={found.fields['confidence']:g}): {found.content}")

    @tool("Delete a memory by id.", annotations=DESTRUCTIVE, writes=True)
    def memory_delete(
        self,
        memory_id: Annotated[str, Field(description="Memory ID, starts with 'mem_'")],
    ) -> CallToolResult:
        deleted = self.use(DeleteMemory)()(memory_id)
        return render.ok({"id": deleted, "deleted": True}, f"Deleted memory: {deleted}")

    @tool("A memory's versions (those it replaced, those that replaced it), oldest first.",
          annotations=READ_ONLY, needs_store=False)
    def memory_history(
        self,
        memory_id: Annotated[str, Field(description="Memory ID, starts with 'mem_'")],
    ) -> CallToolResult:
        versions = self.use(MemoryHistory)()(memory_id)
        lines = [f"{len(versions)} versions, oldest first:", *(render.memory_line(h, False) + (
            f" [until {h.fields['valid_to']}]" if h.fields.get("valid_to") else " [current]") for h in versions)]
        return render.ok({"memory_id": memory_id, "count": len(versions),
                          "versions": [render.hit(h, ranked=False) for h in versions]}, "\n".join(lines))
