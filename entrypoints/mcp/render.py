"""Turns use-case results into MCP results: structured content plus a short text rendering."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from mcp.types import CallToolResult, TextContent

from adapters import request_scope
from domain.errors import MemtroveError
from domain.memories.validity import validity
from domain.access.privacy import Privacy
from domain.access.rules import NEVER, readers
from domain.model import Hit, Memory, Owned, Turn


def ok(structured: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def warned(structured: dict[str, Any], text: str, notes: list[str]) -> CallToolResult:
    """``ok``, with a top-level ``warnings`` list when the use case noted any (a rerank model that failed, so
    the learned stage ordered the results), each also a ``Warning:`` line atop the text."""
    if not notes:
        return ok(structured, text)
    return ok({**structured, "warnings": list(notes)}, "\n".join([*(f"Warning: {n}" for n in notes), text]))


def error(exc: MemtroveError) -> CallToolResult:
    detail: dict[str, Any] = {"type": exc.kind, "message": exc.message}
    if exc.field is not None:  # bad input, or the argument that named a missing item
        detail["field"] = exc.field
    return CallToolResult(content=[TextContent(type="text", text=exc.message)],
                          structured_content={"error": detail}, is_error=True)


def preview(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


# Not copied into a shown hit: the snippet (placed first, or replaced by ``content``), the expansion
# flag (``content`` shows it), the retention policy (it says nothing about why the hit matched;
# artifact_get has it) and a passage's chunk range (its start_char/end_char say where it is).
_UNSHOWN = frozenset({"retention_policy", "expanded", "snippet", "whole", "chunk_range"})


def hit(h: Hit, ranked: bool = True) -> dict[str, Any]:
    """A hit with its text once: ``snippet`` (around the query's words) from a search, the whole
    passage as ``content`` when neighbours were asked for (or for a listing, which has no snippet).
    A record read rather than ranked (a listing, a get, a memory's versions) has no score to show."""
    cut = "snippet" in h.fields and not h.fields.get("expanded") and not h.fields.get("whole")
    text: dict[str, Any] = {"snippet": h.fields["snippet"]} if cut else {"content": h.content}
    if cut and h.type == "memory" and h.fields["snippet"] != h.content:
        text["truncated"] = True  # memory_get reads it whole
    return {"id": h.id, "type": h.type, **({"score": h.score} if ranked else {}), **text,
            **{k: v for k, v in h.fields.items() if k not in _UNSHOWN}}


def shown_text(h: Hit) -> str:
    """The hit's snippet on one line (whitespace runs collapsed), or its content when it has none."""
    return " ".join(str(h.fields.get("snippet", h.content)).split())


def memory(m: Memory) -> dict[str, Any]:
    return {"id": m.id, "type": "memory", "memory_type": m.type, "confidence": m.confidence, "ts": m.ts,
            "conversation_id": m.conversation_id, "token_count": m.token_count, **m.profile.as_metadata(),
            **validity(m), **privacy(m)}


def memory_line(h: Hit, with_score: bool) -> str:
    """Spec 000 §12.2's memory line; a search hit shows its snippet, a listed memory a preview."""
    score = f", score={h.score:.3f}" if with_score else ""
    if h.fields.get("whole"):
        text = h.content
    else:
        text = shown_text(h) if "snippet" in h.fields else preview(h.content)
        text += " (cut: memory_get reads it whole)" if "snippet" in h.fields and h.fields["snippet"] != h.content else ""
    return f"[{h.id}] ({h.fields['memory_type']}, conf={h.fields['confidence']:g}{score}): {text}"


def turn(t: Turn) -> dict[str, Any]:
    return {"id": t.id, "conversation_id": t.conversation_id, "role": t.role, "content": t.content,
            "turn_index": t.turn_index, "ts": t.ts, "token_count": t.token_count, **privacy(t)}


_DEFAULTS = {name: getattr(Privacy(), name) for name in ("sensitivity", "visibility_scope", "retention_policy")}


def privacy(item: Owned) -> dict[str, Any]:
    """An item's privacy fields that differ from the spec's defaults, and when it expires if it does."""
    shown: dict[str, Any] = {k: getattr(item, k) for k, v in _DEFAULTS.items() if getattr(item, k) != v}
    if item.expires_epoch < NEVER:
        shown["expires_at"] = datetime.fromtimestamp(item.expires_epoch, timezone.utc).isoformat(
            timespec="seconds").replace("+00:00", "Z")
    return shown


def unreadable(item: Owned) -> dict[str, Any]:
    """For a write its writer may not read back (above its clearance, for a wider audience): who can."""
    context = request_scope.current()
    if context.principal.may_read(item.sensitivity):
        return {}
    return {"you_can_read": False, "readable_by": readers(item.acl, item.sensitivity, context)}


def written_note(item: Owned) -> str:
    """The sentence a write's text ends with when its writer may not read it back."""
    told = unreadable(item)
    return f" (above your clearance: you cannot read it back; readable by {told['readable_by']})" if told else ""


def as_json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, sort_keys=False)
