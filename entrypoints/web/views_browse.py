"""Browse: memories (paged, by type and sensitivity), artifacts with their chunks and heading paths,
conversations as threads, project documents with their versions and a diff, session memories by
session and iteration. Each page is one read tool's answer to the caller."""

from __future__ import annotations

import difflib
from typing import Any

from urllib.parse import quote

import anyio
from starlette.responses import RedirectResponse
from starlette.requests import Request
from starlette.responses import Response

from domain.model import ARTIFACT_TYPES, MEMORY_TYPES, SENSITIVITIES
from entrypoints.web.app import PREFIX, Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.session import Caller

PAGE = 25


async def memories(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    kind, sensitivity = params.get("type") or None, params.get("sensitivity") or None
    page = await ui.tool(caller, "memory_list", type=kind, limit=PAGE, cursor=params.get("cursor") or None)
    rows = [m for m in page["results"] if sensitivity in (None, m.get("sensitivity", "normal"))]
    return ui.page(request, caller, "memories.html", rows=rows, next_cursor=page["next_cursor"], kind=kind or "",
                   sensitivity=sensitivity or "", types=MEMORY_TYPES, sensitivities=SENSITIVITIES)


async def memory(ui: Ui, request: Request, caller: Caller) -> Response:
    found = await ui.tool(caller, "memory_get", memory_id=request.path_params["memory_id"])
    return ui.page(request, caller, "memory.html", memory=found, types=MEMORY_TYPES, error=None, saved=False)


async def artifacts(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    page = await ui.tool(caller, "artifact_list", artifact_type=params.get("type") or None,
                         source_system=params.get("source") or None, limit=PAGE, cursor=params.get("cursor") or None)
    return ui.page(request, caller, "artifacts.html", rows=page["results"], next_cursor=page["next_cursor"],
                   kind=params.get("type", ""), source=params.get("source", ""), types=ARTIFACT_TYPES)


async def artifact(ui: Ui, request: Request, caller: Caller) -> Response:
    found = await ui.tool(caller, "artifact_get", artifact_id=request.path_params["artifact_id"],
                          include_chunks=True, include_content=True)
    if "metadata" not in found:  # only an ingest under way (or failed) is known of it
        return ui.page(request, caller, "ingest_status.html", artifact=found, whole=True)
    listed = found.get("chunks") or []
    passage = request.query_params.get("passage")
    index = request.query_params.get("chunk", "")  # a passage named by its chunk's index (a timeline event's)
    if not passage and index.isascii() and index.isdigit():
        passage = next((c["chunk_id"] for c in listed if c.get("chunk_index") == int(index)), None)
    chunks = [{**c, "heading": _heading(c.get("metadata") or {})}
              for c in once(found.get("content") or "", listed, passage)]
    return ui.page(request, caller, "artifact.html", artifact=found, chunks=chunks, passage=passage)


def once(content: str, chunks: list[dict[str, Any]], passage: str | None) -> list[dict[str, Any]]:
    """Each chunk with the text it adds to the ones before it (``text``; ``skipped``: the characters of
    its start the chunk before already showed), so the document reads once, not each overlap twice. The
    passage asked for is shown whole (the chunk before it then stops where it starts)."""
    ordered = sorted(chunks, key=lambda c: (c["start_char"], c["end_char"]))
    shown, out = 0, []
    for number, c in enumerate(ordered):
        start, end = c["start_char"], c["end_char"]
        begin = start if c["chunk_id"] == passage else min(max(start, shown), end)
        after = ordered[number + 1] if number + 1 < len(ordered) else None
        stop = min(end, after["start_char"]) if after is not None and after["chunk_id"] == passage else end
        stop = max(stop, begin)
        out.append({**c, "text": content[begin:stop], "skipped": begin - start})
        shown = max(shown, stop)
    return out


def _heading(metadata: dict[str, Any]) -> str:
    path = metadata.get("heading_path") or metadata.get("headings") or metadata.get("section")
    return " › ".join(str(p) for p in path) if isinstance(path, list) else str(path or "")


async def conversation(ui: Ui, request: Request, caller: Caller) -> Response:
    conversation_id = request.path_params["conversation_id"]
    owner = request.query_params.get("owner") or None  # another's conversation of that id (ids are each one's own)
    page = await ui.tool(caller, "history_get", conversation_id=conversation_id, limit=50,
                         cursor=request.query_params.get("cursor") or None, owner=owner)
    return ui.page(request, caller, "conversation.html", conversation_id=conversation_id, turns=page["turns"],
                   earlier=page["next_cursor"], owner=owner)


async def conversations(ui: Ui, request: Request, caller: Caller) -> Response:
    opened = request.query_params.get("cid", "").strip()
    if opened:  # the "open by id" form
        return RedirectResponse(f"{PREFIX}/conversations/{quote(opened)}", status_code=303)
    page = await ui.tool(caller, "conversation_list", limit=PAGE, cursor=request.query_params.get("cursor") or None)
    return ui.page(request, caller, "conversations.html", rows=page["results"], next_cursor=page["next_cursor"])


async def document(ui: Ui, request: Request, caller: Caller) -> Response:
    key = request.query_params.get("key", "").strip()
    if not key:
        project = ui.runtime.settings.memtrove_project
        items = await anyio.to_thread.run_sync(_latest_items, ui, caller, project)
        return ui.page(request, caller, "documents.html", key="", doc=None, versions=[], diff=None, items=items,
                       project=project)
    version = _number(request.query_params.get("v"))
    doc = await ui.tool(caller, "canonical_get", canonicalKey=key, versionNum=version)
    latest = int(doc.get("latestVersion") or doc.get("versionNum") or 1)
    diff = None
    against = _number(request.query_params.get("against"))
    if against is not None:
        other = await ui.tool(caller, "canonical_get", canonicalKey=key, versionNum=against)
        diff = list(difflib.unified_diff(
            str(other.get("contentMarkdown", "")).splitlines(), str(doc.get("contentMarkdown", "")).splitlines(),
            f"version {against}", f"version {doc.get('versionNum')}", lineterm=""))
    return ui.page(request, caller, "documents.html", key=key, doc=doc, versions=list(range(latest, 0, -1)),
                   diff=diff, against=against)


async def sessions(ui: Ui, request: Request, caller: Caller) -> Response:
    listed = await ui.tool(caller, "list_sessions", limit=100)
    session_id = request.query_params.get("session", "").strip()
    entries: list[dict[str, Any]] = []
    iteration = _number(request.query_params.get("iter"))
    if session_id:
        for tool in ("search_session_context", "search_input_prompts"):
            found = await ui.tool(caller, tool, session_id=session_id, session_iter=iteration, limit=50)
            entries += [{**e, "kind": tool.removeprefix("search_")} for e in _items(found)]
    return ui.page(request, caller, "sessions.html", listed=_items(listed), session_id=session_id,
                   iteration=iteration, entries=entries)


async def graph(ui: Ui, request: Request, caller: Caller) -> Response:
    """The caller's knowledge graph: a page of entities with their relations, or those a query matches."""
    query = request.query_params.get("q", "").strip()
    if query:
        found = await ui.tool(caller, "search_nodes", query=query)
        next_offset = None
    else:
        found = await ui.tool(caller, "read_graph", limit=PAGE, offset=_number(request.query_params.get("offset")) or 0)
        next_offset = found.get("next_offset")
    return ui.page(request, caller, "graph.html", query=query, entities=found["entities"],
                   relations=found["relations"], next_offset=next_offset)


def _latest_items(ui: Ui, caller: Caller, project: str) -> list[Any]:
    """The project's items, newest version of each (as its resources list them), for a caller of the project."""
    if not caller.principal.in_project(project):
        return []
    return ui.runtime.app.adapters.store().latest_items(project, limit=200)


def _items(answer: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("results", "sessions", "memories", "items"):
        if isinstance(answer.get(key), list):
            return answer[key]
    return []


def _number(value: str | None) -> int | None:
    if value is None or not value.strip():
        return None
    if not (value.strip().isascii() and value.strip().isdigit()):
        raise ToolFailed(f"a version or iteration is a whole number (got {value!r})", "v")
    return int(value)


ROUTES = [
    ("/memories", memories, ["GET"]),
    ("/memories/{memory_id}", memory, ["GET"]),
    ("/artifacts", artifacts, ["GET"]),
    ("/artifacts/{artifact_id}", artifact, ["GET"]),
    ("/conversations", conversations, ["GET"]),
    ("/conversations/{conversation_id:path}", conversation, ["GET"]),
    ("/documents", document, ["GET"]),
    ("/sessions", sessions, ["GET"]),
    ("/graph", graph, ["GET"]),
]
