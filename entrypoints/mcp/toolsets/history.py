"""Core toolset: conversation history (spec 000 §7). A conversation id is each caller's own."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from domain.access.privacy import Privacy
from domain.history.usecases import AppendTurn, AppendTurnRequest, GetHistory
from domain.model import ROLES
from entrypoints.mcp import render
from entrypoints.mcp.toolkit import READ_ONLY, Toolbox, tool
from entrypoints.mcp.tooling import Retention, RetentionDays, Sensitivity, Visibility, VisibleTo

_SAID = {"appended": "Appended turn {i} to {c}", "replaced": "Replaced turn {i} of {c}",
         "unchanged": "Turn {i} of {c} already stored (unchanged)"}


class HistoryTools(Toolbox):
    toolset = "core"

    @tool("Append a turn to a conversation (same turn and content again is a no-op).", writes=True)
    def history_append(
        self,
        conversation_id: Annotated[str, Field(description="Conversation ID, 1-100 characters")],
        role: Annotated[str, Field(description="Speaker role: " + ", ".join(ROLES),
                                   json_schema_extra={"enum": list(ROLES)})],
        content: Annotated[str, Field(description="Message content, 1-50000 characters")],
        turn_index: Annotated[int, Field(description="Turn number, >= 0")],
        ts: Annotated[str | None, Field(description="When the turn happened, ISO-8601 (default: now)")] = None,
        sensitivity: Sensitivity = "normal",
        visibility_scope: Visibility = "me",
        retention_policy: Retention = "forever",
        visible_to: VisibleTo = None,
        retention_days: RetentionDays = None,
    ) -> CallToolResult:
        privacy = Privacy(sensitivity, visibility_scope, retention_policy, visible_to, retention_days)
        result = self.use(AppendTurn)()(AppendTurnRequest(conversation_id, role, content, turn_index, ts, privacy))
        t = result.turn
        body = {k: v for k, v in render.turn(t).items() if k != "content"}
        return render.ok({**body, "status": result.status, **render.unreadable(t)},
                         _SAID[result.status].format(i=t.turn_index, c=t.conversation_id) + render.written_note(t))

    @tool("Get the most recent turns of a conversation, oldest first: yours, or with owner another's "
          "(the turns it shares with you; conversation ids are each caller's own).",
          annotations=READ_ONLY, needs_store=False)
    def history_get(
        self,
        conversation_id: Annotated[str, Field(description="Conversation ID, 1-100 characters")],
        limit: Annotated[int, Field(description="Number of recent turns, 1-50")] = 16,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page: the turns before it")] = None,
        owner: Annotated[str | None, Field(description="Whose conversation: a user id (default: yours), as "
                                                       "conversation_list and search hits name it")] = None,
    ) -> CallToolResult:
        page = self.use(GetHistory)()(conversation_id, limit, cursor, owner=owner)
        turns = page.items
        text = "\n".join(f"{t.role}: {t.content}" for t in turns) or f"No turns in {conversation_id}."
        if page.next_cursor:
            text += f"\nEarlier turns: call again with cursor={page.next_cursor}"
        return render.ok({"conversation_id": conversation_id, **({"owner": owner} if owner is not None else {}),
                          "count": len(turns), "turns": [render.turn(t) for t in turns],
                          "next_cursor": page.next_cursor}, text)
