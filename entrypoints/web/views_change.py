"""Change: edit a memory, delete a memory or an artifact, ingest uploaded files or pasted text and watch
it index. Every change is a tool call (memory_update, memory_delete, artifact_delete, artifact_ingest):
checked and audited as an agent's; a refusal shows its message by the field and changes nothing."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from domain.artifacts.input import MAX_CONTENT
from domain.model import ARTIFACT_TYPES, MEMORY_TYPES
from entrypoints.web.app import PREFIX, Refused, Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.session import Caller

PRIVACY = ("sensitivity", "visibility_scope", "retention_policy")
MAX_FILES = 100


async def edit_memory(ui: Ui, request: Request, caller: Caller) -> Response:
    memory_id = request.path_params["memory_id"]
    form = await ui.form(request, caller)
    asked: dict[str, Any] = {"content": _text(form, "content"), "type": _text(form, "type")}
    try:
        asked["confidence"] = _float(form, "confidence")
        asked["retention_days"] = _int(form, "retention_days")
        visible = _text(form, "visible_to")
        asked["visible_to"] = [v.strip() for v in visible.split(",") if v.strip()] if visible else None
        asked |= {field: _text(form, field) for field in PRIVACY}
        await ui.tool(caller, "memory_update", memory_id=memory_id, **asked)
    except ToolFailed as exc:
        found = await ui.tool(caller, "memory_get", memory_id=memory_id)
        return ui.page(request, caller, "memory.html", status=400, memory=found, types=MEMORY_TYPES,
                       error={"message": exc.message, "field": exc.field}, asked=asked, saved=False)
    return RedirectResponse(f"{PREFIX}/memories/{memory_id}?saved=1", status_code=303)


async def delete_memory(ui: Ui, request: Request, caller: Caller) -> Response:
    await ui.form(request, caller)
    await ui.tool(caller, "memory_delete", memory_id=request.path_params["memory_id"])
    return RedirectResponse(f"{PREFIX}/memories?deleted={request.path_params['memory_id']}", status_code=303)


async def delete_artifact(ui: Ui, request: Request, caller: Caller) -> Response:
    await ui.form(request, caller)
    await ui.tool(caller, "artifact_delete", artifact_id=request.path_params["artifact_id"])
    return RedirectResponse(f"{PREFIX}/artifacts?deleted={request.path_params['artifact_id']}", status_code=303)


async def ingest_form(ui: Ui, request: Request, caller: Caller) -> Response:
    return ui.page(request, caller, "ingest.html", types=ARTIFACT_TYPES, results=None, error=None, asked={})


async def ingest(ui: Ui, request: Request, caller: Caller) -> Response:
    """Each uploaded file (UTF-8 text) and the pasted text, if any, as an artifact of the chosen type."""
    form = await ui.form(request, caller, max_part_size=MAX_CONTENT + 1, max_files=MAX_FILES)
    asked = {"artifact_type": _text(form, "artifact_type") or "doc",
             "source_system": _text(form, "source_system") or "upload", "title": _text(form, "title"),
             **{field: _text(form, field) for field in PRIVACY}}
    pieces: list[tuple[str, str | None, str]] = []  # (name shown, source_id, text)
    uploads = [f for f in form["_files"] if isinstance(f, UploadFile) and f.filename]
    if len(uploads) > MAX_FILES:
        raise Refused(400, f"files: at most {MAX_FILES} files at once (got {len(uploads)})")
    results: list[dict[str, Any]] = []
    for upload in uploads:
        data = await upload.read()
        try:
            pieces.append((upload.filename or "file", upload.filename, data.decode("utf-8")))
        except UnicodeDecodeError:
            results.append({"name": upload.filename, "error": "not UTF-8 text (a binary file?): skipped"})
    pasted = _text(form, "content")
    if pasted:
        pieces.append((asked["title"] or "pasted text", None, pasted))
    if not pieces and not results:
        return ui.page(request, caller, "ingest.html", status=400, types=ARTIFACT_TYPES, results=None, asked=asked,
                       error={"field": "content", "message": "Choose a file or paste some text (content is empty)"})
    for name, source_id, text in pieces:
        try:
            title = asked["title"] if source_id is None else (asked["title"] or name)
            answer = await ui.tool(caller, "artifact_ingest", content=text, source_id=source_id, title=title,
                                   **{k: v for k, v in asked.items() if k != "title"})
            results.append({"name": name, **answer})
        except ToolFailed as exc:
            results.append({"name": name, "error": exc.message, "field": exc.field})
    failed = all("error" in r for r in results)
    return ui.page(request, caller, "ingest.html", status=400 if failed else 200, types=ARTIFACT_TYPES,
                   results=results, error=None, asked=asked)


async def ingest_status(ui: Ui, request: Request, caller: Caller) -> Response:
    """One artifact's indexing progress (artifact_get's, as an MCP client reads it): a fragment the page
    asks for again every second while it is indexing."""
    found = await ui.tool(caller, "artifact_get", artifact_id=request.path_params["artifact_id"])
    return ui.page(request, caller, "ingest_status.html", artifact=found)


def _text(form: dict[str, Any], name: str) -> str | None:
    value = form.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _float(form: dict[str, Any], name: str) -> float | None:
    value = _text(form, name)
    try:
        return None if value is None else float(value)
    except ValueError:
        raise ToolFailed(f"{name} must be a number from 0.0 to 1.0 (got {value!r})", name) from None


def _int(form: dict[str, Any], name: str) -> int | None:
    value = _text(form, name)
    if value is not None and not (value.isascii() and value.isdigit()):
        raise ToolFailed(f"{name} must be a whole number of days from 1 to 36500 (got {value!r})", name)
    return None if value is None else int(value)


ROUTES = [
    ("/memories/{memory_id}", edit_memory, ["POST"]),
    ("/memories/{memory_id}/delete", delete_memory, ["POST"]),
    ("/artifacts/{artifact_id}/delete", delete_artifact, ["POST"]),
    ("/ingest", ingest_form, ["GET"]),
    ("/ingest", ingest, ["POST"]),
    ("/ingest/status/{artifact_id}", ingest_status, ["GET"]),
]
