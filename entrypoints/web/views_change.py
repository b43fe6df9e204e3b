"""Change: edit a memory, delete a memory or an artifact, ingest uploaded files or pasted text and watch
it index. Every change is a tool call (memory_update, memory_delete, artifact_delete, artifact_ingest):
checked and audited as an agent's; a refusal shows its message by the field and changes nothing."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

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
    """The form (shown filled with the memory as stored) as memory_update's arguments: only the fields that
    differ from the stored memory are sent; none: nothing is called, written or audited ("Nothing changed")."""
    memory_id = request.path_params["memory_id"]
    form = await ui.form(request, caller)
    found = await ui.tool(caller, "memory_get", memory_id=memory_id)
    asked = {name: _given(form, name) for name in ("content", "type", "confidence", "visible_to", "retention_days",
                                                    *PRIVACY)}
    try:
        change = memory_change(found, asked)
        changed = (await ui.tool(caller, "memory_update", memory_id=memory_id, **change))["changed"] if change else []
    except ToolFailed as exc:
        return ui.page(request, caller, "memory.html", status=400, memory=found, types=MEMORY_TYPES,
                       error={"message": exc.message, "field": exc.field}, asked=asked)
    shown = urlencode({"saved": ", ".join(changed)} if changed else {"unchanged": "1"})
    return RedirectResponse(f"{PREFIX}/memories/{memory_id}?{shown}", status_code=303)


def memory_change(found: dict[str, Any], asked: dict[str, str]) -> dict[str, Any]:
    """memory_update's arguments for what the form changes of the stored memory ``found`` (memory_get's
    answer): content, type and confidence as stored are not sent (a field emptied is, so the tool names
    it: "must not be empty"); a privacy field is sent when one is chosen ("keep" is blank: memory_get
    does not tell a memory's privacy, so the tool's answer says whether it changed)."""
    change: dict[str, Any] = {}
    content = asked["content"].replace("\r\n", "\n").strip()  # a browser sends a textarea's lines as CRLF
    if content != str(found.get("content") or "").strip():
        change["content"] = content
    if asked["type"] and asked["type"] != found.get("memory_type"):
        change["type"] = asked["type"]
    confidence = _float("confidence", asked["confidence"])
    if confidence != found.get("confidence"):
        change["confidence"] = confidence
    for field in PRIVACY:
        if asked[field]:
            change[field] = asked[field]
    if asked["visible_to"]:
        change["visible_to"] = [v.strip() for v in asked["visible_to"].split(",") if v.strip()]
    if asked["retention_days"]:
        change["retention_days"] = _int("retention_days", asked["retention_days"])
    return change


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
            answer = await ui.start(caller, "artifact_ingest", content=text, source_id=source_id, title=title,
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
    artifact_id = request.path_params["artifact_id"]
    try:
        found = await ui.tool(caller, "artifact_get", artifact_id=artifact_id)
    except ToolFailed as exc:  # deleted meanwhile: said in the line, which stops asking (not a page inside it)
        found = {"artifact_id": artifact_id, "status": "gone", "error": exc.message}
    return ui.page(request, caller, "ingest_status.html", artifact=found)


def _text(form: dict[str, Any], name: str) -> str | None:
    value = form.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _given(form: dict[str, Any], name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def _float(name: str, value: str) -> float:
    try:
        return float(value.strip())
    except ValueError:
        raise ToolFailed(f"{name} must be a number from 0.0 to 1.0 (got {value.strip()!r})", name) from None


def _int(name: str, value: str) -> int:
    value = value.strip()
    if not (value.isascii() and value.isdigit()):
        raise ToolFailed(f"{name} must be a whole number of days from 1 to 36500 (got {value!r})", name)
    return int(value)


ROUTES = [
    ("/memories/{memory_id}", edit_memory, ["POST"]),
    ("/memories/{memory_id}/delete", delete_memory, ["POST"]),
    ("/artifacts/{artifact_id}/delete", delete_artifact, ["POST"]),
    ("/ingest", ingest_form, ["GET"]),
    ("/ingest", ingest, ["POST"]),
    ("/ingest/status/{artifact_id}", ingest_status, ["GET"]),
]
