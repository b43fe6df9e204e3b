"""Time toolset: what changed between two times (spec 000 §13.4's temporal queries), read off the
change log that every write appends to in its transaction."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.changes.model import Change
from domain.changes.usecases import MemoryChanges
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool


def change(c: Change) -> dict[str, Any]:
    return {"seq": c.seq, "ts": c.ts, "kind": c.kind, "collection": c.collection, "id": c.item_id, "actor": c.actor,
            **({"conversation_id": c.conversation_id} if c.conversation_id else {}),
            **({"source": c.source} if c.source else {}), **c.detail}


class ChangeTools(Toolbox):
    toolset = "time"

    @tool("What was added, changed, superseded and deleted between two times (memories, conversation turns, "
          "documents, your graph), oldest first; paged.", annotations=READ_ONLY)
    def memory_changes(
        self,
        since: Annotated[str, Field(description="From this ISO-8601 time (e.g. 2024-05-01)")],
        until: Annotated[str | None, Field(description="To this ISO-8601 time (default: now)")] = None,
        kinds: Annotated[list[str] | None, Field(description="Only: added, changed, superseded, deleted")] = None,
        collections: Annotated[list[str] | None, Field(description="Only: memory, turn, artifact, graph")] = None,
        conversation_id: Annotated[str | None, Field(description="Only this conversation's")] = None,
        source: Annotated[str | None, Field(description="Only documents of this source system")] = None,
        entity: Annotated[str | None, Field(description="Only records naming this entity of your graph")] = None,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        limit: Annotated[int, Field(description="Max changes, 1-500")] = 50,
    ) -> CallToolResult:
        found, next_cursor = self.use(MemoryChanges)()(since, until, kinds, collections, conversation_id, source,
                                                      entity, cursor, limit)
        lines = [f"{len(found)} changes:", *(f"{c.ts} {c.kind} {c.collection} {c.item_id}" for c in found)]
        if next_cursor:
            lines.append(f"More: call again with cursor={next_cursor}")
        return render.ok({"count": len(found), "changes": [change(c) for c in found], "next_cursor": next_cursor},
                         "\n".join(lines))
