"""Timeline: the decisions, actions and milestones build_graph read from the caller's records, in date
order (the ``timeline`` tool, as an agent would call it), grouped by month or day, each opening the
memory, the conversation turn or the artifact passage it was read from."""

from __future__ import annotations

from datetime import date
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from domain.graph.extraction import EVENT_KINDS
from domain.ids import turn_of
from entrypoints.web.app import Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.session import Caller
from entrypoints.web.views_search import opened

GROUPS = ("month", "day")
FIELDS = ("conversation_id", "entity", "since", "until")
PAGE = 50


async def timeline(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    asked: dict[str, Any] = {k: params.get(k, "").strip() for k in FIELDS}
    asked["kinds"] = [k for k in params.getlist("kinds") if k]
    asked["group"] = params.get("group") if params.get("group") in GROUPS else GROUPS[0]
    cursor = params.get("cursor") or None
    values: dict[str, Any] = {"asked": asked, "all_kinds": EVENT_KINDS, "all_groups": GROUPS, "groups": [],
                              "count": 0, "next_query": None, "error": None, "paged": cursor is not None,
                              "filtered": any(asked[k] for k in (*FIELDS, "kinds"))}
    try:
        found = await ui.tool(caller, "timeline", **{k: asked[k] or None for k in (*FIELDS, "kinds")},
                              cursor=cursor, limit=PAGE)
    except ToolFailed as exc:  # a bad date or kind: the tool's message, beside the form
        values["error"] = {"message": exc.message, "field": exc.field}
        return ui.page(request, caller, "timeline.html", status=400, **values)
    events = [sourced(e) for e in found["events"]]
    values.update(groups=grouped(events, asked["group"]), count=len(events))
    if found.get("next_cursor"):
        kept = [(k, asked[k]) for k in FIELDS if asked[k]] + [("kinds", k) for k in asked["kinds"]]
        values["next_query"] = [*kept, ("group", asked["group"]), ("cursor", found["next_cursor"])]
    return ui.page(request, caller, "timeline.html", **values)


def sourced(event: dict[str, Any]) -> dict[str, Any]:
    """An event with where it was read and a link there, as a search hit of the same record opens."""
    source = event.get("source") or {}
    kind, record, part = source.get("record_type"), str(source.get("record_id") or ""), source.get("chunk_index")
    link, where = None, f"{kind} {record}"
    if kind == "memory":
        link = opened({"type": "memory", "id": record})["link"]
        where = f"memory {record}"
    elif kind == "turn" and (turn := turn_of(record)) is not None:  # the event names only the turn's id
        conversation, index = turn
        link = opened({"type": "history", "id": record, "conversation_id": conversation, "turn_index": index})["link"]
        where = f"conversation {conversation}, turn {index}"
    elif kind == "artifact":
        # The event names the chunk by its index: the artifact page marks the chunk of that index.
        link = opened({"type": "artifact", "id": record, "artifact_id": record})["link"]
        if part is not None:
            link, where = f"{link}?chunk={int(part)}#chunk-{int(part)}", f"artifact {record}, chunk {part}"
        else:
            where = f"artifact {record}"
    return {**event, "link": link, "where": where}


def grouped(events: list[dict[str, Any]], by: str) -> list[dict[str, Any]]:
    """Events under a heading per month (or day), in the order they came (the tool's date order)."""
    groups: list[dict[str, Any]] = []
    for e in events:
        label = heading(e.get("date"), by)
        if not groups or groups[-1]["label"] != label:
            groups.append({"label": label, "events": []})
        groups[-1]["events"].append(e)
    return groups


def heading(when: object, by: str) -> str:
    """'March 2024' or '12 March 2024' from an ISO date (or time); 'Undated' when there is none."""
    text = str(when or "")
    try:
        day = date.fromisoformat(text[:10])
    except ValueError:
        return "Undated" if not text else text
    return day.strftime("%B %Y") if by == "month" else f"{day.day} {day.strftime('%B %Y')}"


ROUTES = [("/timeline", timeline, ["GET"])]
