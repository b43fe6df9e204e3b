"""Search: one box, the mode, what to search and filters; hits with their snippet, signals and provenance,
each opening where it came from (hybrid_search, as an agent would call it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from domain.access.principal import LOCAL_USER
from domain.errors import ValidationError
from entrypoints.web.app import PREFIX, Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.relevance import close_similarity, listed
from entrypoints.web.session import Caller

MODES = ("hybrid", "vector", "lexical")
FILTER_KEYS = ("artifact_type", "source_system", "sensitivity", "conversation_id")


async def search(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    query = params.get("q", "").strip()
    asked = {"q": query, "mode": params.get("mode", "hybrid"), "limit": params.get("limit", "10"),
             "memory": params.get("memory", "on"), "history": params.get("history", "on"),  # the form says off
             "filter": params.get("filter", ""), "all": params.get("all", ""),
             **{k: params.get(k, "") for k in FILTER_KEYS}}
    values: dict[str, Any] = {"asked": asked, "modes": MODES, "results": None, "left_out": [], "error": None}
    if query:
        try:
            arguments = search_arguments(asked)
            found = [opened(hit) for hit in (await ui.tool(caller, "hybrid_search", **arguments))["results"]]
            close = close_similarity(ui.runtime.app.use_cases.retrieval().min_similarity)
            values["results"], values["left_out"] = listed(found, query, asked["mode"], close, asked["all"] == "on")
            values["close"] = close
        except (ToolFailed, ValidationError) as exc:
            values["error"] = {"message": exc.message, "field": exc.field}
    return ui.page(request, caller, "search.html", status=400 if values["error"] else 200, **values)


def search_arguments(asked: dict[str, str]) -> dict[str, Any]:
    """The form as hybrid_search's arguments: a number that is not one, or a filter line without ``=``,
    refused here naming the field; ranges and unknown filter keys are the tool's to refuse."""
    limit = asked["limit"].strip()
    if not (limit.isascii() and limit.lstrip("-").isdigit()):
        raise ValidationError("limit", f"limit must be a whole number from 1 to 50 (got {limit!r})")
    filters = {k: asked[k].strip() for k in FILTER_KEYS if asked[k].strip()}
    for line in asked["filter"].splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValidationError("filters", f"each filter is key=value, one per line (got {line.strip()!r})")
        filters[key.strip()] = value.strip()
    return {"query": asked["q"], "mode": asked["mode"], "limit": int(limit), "filters": filters or None,
            "include_memory": asked["memory"] == "on", "include_history": asked["history"] == "on"}


def opened(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit with where it opens: its memory, its artifact at the passage, its conversation at the turn."""
    kind, link = hit.get("type"), None
    if kind == "memory":
        link = f"{PREFIX}/memories/{hit['id']}"
    elif hit.get("artifact_id"):
        passage = f"?passage={hit['id']}#{hit['id']}" if hit["id"] != hit["artifact_id"] else ""
        link = f"{PREFIX}/artifacts/{hit['artifact_id']}{passage}"
    elif hit.get("conversation_id") is not None and hit.get("turn_index") is not None:
        # A conversation id is each owner's own: a hit's provenance names the turn's owner (none: the local
        # owner); without provenance (a timeline event's turn) the link opens the caller's own.
        provenance = hit.get("provenance")
        owner = None if not isinstance(provenance, dict) else provenance.get("owner") or LOCAL_USER
        whose = f"?owner={quote(owner)}" if owner else ""
        link = f"{PREFIX}/conversations/{quote(str(hit['conversation_id']))}{whose}#turn-{hit['turn_index']}"
    return {**hit, "link": link, "text": hit.get("snippet") or hit.get("content") or ""}


ROUTES = [("/search", search, ["GET"])]
