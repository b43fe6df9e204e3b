"""Time toolset: what changed between two times (spec 000 §13.4's temporal queries), read off the
change log that every write appends to in its transaction; and the events build_graph reads from the
caller's records (§13.3): event_search and a timeline."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field

from domain.changes.model import Change
from domain.changes.usecases import MemoryChanges
from domain.graph.events import EventSearch, Timeline
from domain.graph.model import Event
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool


def change(c: Change) -> dict[str, Any]:
    return {"seq": c.seq, "ts": c.ts, "kind": c.kind, "collection": c.collection, "id": c.item_id, "actor": c.actor,
            **({"conversation_id": c.conversation_id} if c.conversation_id else {}),
            **({"source": c.source} if c.source else {}), **c.detail}


def event(e: Event) -> dict[str, Any]:
    return {"kind": e.kind, "summary": e.summary, "who": list(e.who), "date": e.date, "dated_by": e.dated_by,
            **({"date_text": e.date_text} if e.date_text else {}),
            "source": {"record_type": e.evidence.kind, "record_id": e.evidence.record_id,
                       "chunk_index": e.evidence.part if e.evidence.part >= 0 else None,
                       "excerpt": e.evidence.excerpt, "record_time": e.evidence.when}}


def event_line(e: Event) -> str:
    return f"{(e.date or '?')[:10]} {e.kind}: {e.summary}" + (f" ({', '.join(e.who)})" if e.who else "")


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
        lines = [f"{len(found)} changes:", *(f"{c.ts} {c.kind} {c.detail.get('item') or c.collection} {c.item_id}"
                                             for c in found)]
        if next_cursor:
            lines.append(f"More: call again with cursor={next_cursor}")
        return render.ok({"count": len(found), "changes": [change(c) for c in found], "next_cursor": next_cursor},
                         "\n".join(lines))

    @tool("Decisions, actions and milestones found in what you stored (build_graph reads them), best match "
          "first, each with its date and the passage it came from.", annotations=READ_ONLY)
    def event_search(
        self,
        query: Annotated[str, Field(description="What happened, 1-500 characters")],
        since: Annotated[str | None, Field(description="Only events from this ISO-8601 date")] = None,
        until: Annotated[str | None, Field(description="Only events up to this ISO-8601 date")] = None,
        kinds: Annotated[list[str] | None, Field(description="Only: decision, action, milestone")] = None,
        limit: Annotated[int, Field(description="Max events, 1-50")] = 10,
    ) -> CallToolResult:
        found = self.use(EventSearch)()(query, since, until, kinds, limit)
        return render.ok({"query": query, "count": len(found), "events": [event(e) for e in found]},
                         "\n".join([f"{len(found)} events:", *map(event_line, found)]))

    @tool("Events in date order: of a conversation, of an entity of your graph, or all; paged.",
          annotations=READ_ONLY)
    def timeline(
        self,
        conversation_id: Annotated[str | None, Field(description="Only this conversation's")] = None,
        entity: Annotated[str | None, Field(description="Only events this entity takes part in")] = None,
        since: Annotated[str | None, Field(description="From this ISO-8601 date")] = None,
        until: Annotated[str | None, Field(description="To this ISO-8601 date")] = None,
        kinds: Annotated[list[str] | None, Field(description="Only: decision, action, milestone")] = None,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None,
        limit: Annotated[int, Field(description="Max events, 1-200")] = 50,
    ) -> CallToolResult:
        found, next_cursor = self.use(Timeline)()(conversation_id, entity, since, until, kinds, cursor, limit)
        lines = [f"{len(found)} events:", *map(event_line, found)]
        if next_cursor:
            lines.append(f"More: call again with cursor={next_cursor}")
        return render.ok({"count": len(found), "events": [event(e) for e in found], "next_cursor": next_cursor},
                         "\n".join(lines))
