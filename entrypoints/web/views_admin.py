"""Health (counts, sizes, embedding profile, backlog, latency percentiles, items over time) and the audit
log (filtered by actor, action, kind and time), with the tokens and a switch to revoke each (the data
dir's owner only: a token's principal sees its own entries and no tokens)."""

from __future__ import annotations

from datetime import datetime, timezone

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from adapters import request_scope
from adapters.metrics import outbox_backlog
from domain.access.audit import AuditChoices, AuditQuery, ReadAudit
from domain.access.principal import LOCAL_USER
from domain.access.tokens import ListTokens, RevokeToken
from domain.errors import MemtroveError
from entrypoints.web import wording
from entrypoints.web.app import PREFIX, Refused, Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.health import bar_chart, latency_rows
from entrypoints.web.session import Caller


async def health(ui: Ui, request: Request, caller: Caller) -> Response:
    stats = await ui.tool(caller, "store_stats")
    latency = latency_rows(ui.runtime.metrics.registry)
    backlog = await anyio.to_thread.run_sync(index_backlog, ui, caller)
    return ui.page(request, caller, "health.html", stats=stats, latency=latency, chart=bar_chart(latency),
                   backlog=backlog)


def index_backlog(ui: Ui, caller: Caller) -> dict[str, object]:
    """What the indexes still have to take in: vector writes queued for the vector index (the server's
    figure, as /metrics shows it), and for the data dir's owner the documents being indexed, each with
    how many of its chunks are embedded."""
    store = ui.runtime.app.adapters.store()
    owner = caller.principal.user_id == LOCAL_USER
    jobs = [j for j in store.open_jobs() if j.status == "indexing"] if owner else []
    return {"queued": int(outbox_backlog(store)), "owner": owner,
            "jobs": [{"artifact_id": j.artifact_id, "done": j.done, "total": j.total} for j in jobs]}


async def audit(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    asked = {k: params.get(k, "").strip() for k in ("actor", "action", "collection", "since", "until", "via")}
    query = AuditQuery(**{k: v or None for k, v in asked.items()}, limit=200)
    owner = caller.principal.user_id == LOCAL_USER
    store = ui.runtime.app.adapters.store()

    def read() -> tuple[list, AuditChoices, list]:
        with request_scope.scope(caller.principal):
            reader = ReadAudit(store, request_scope.current)
            tokens = ListTokens(store)() if owner else []
            return reader(query), reader.choices(), tokens
    try:
        entries, choices, tokens = await anyio.to_thread.run_sync(read)
    except MemtroveError as exc:
        raise ToolFailed(exc.message, getattr(exc, "field", None)) from exc
    usage = client_usage(ui.runtime.metrics, [t.token_id for t in tokens])
    rows = [{"entry": e, "what": wording.what(e), "kind": wording.kind(e.collection)} for e in entries]
    actions = [(a, wording.action(a)) for a in choices.actions]
    kinds = [(c, wording.kind(c)) for c in choices.collections]
    return ui.page(request, caller, "audit.html", rows=rows, asked=asked, actors=choices.actors, actions=actions,
                   kinds=kinds, tokens=tokens, owner=owner, usage=usage)


def client_usage(metrics: object, token_ids: list[str]) -> dict[str, dict[str, object]]:
    """Per token, its calls since the server started (its own and the page's signed in with it), by kind,
    and when it was last seen."""
    calls = metrics.client_calls()  # type: ignore[attr-defined]
    seen = metrics.last_seen  # type: ignore[attr-defined]
    usage: dict[str, dict[str, object]] = {}
    for token_id in token_ids:
        names = (token_id, f"page ({token_id})")
        kinds = {kind: sum(calls.get(name, {}).get(kind, 0) for name in names) for kind in ("read", "write", "refused")}
        last = max((seen[name] for name in names if name in seen), default=None)
        usage[token_id] = {**kinds, "last_seen": None if last is None else
                           datetime.fromtimestamp(last, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")}
    return usage


async def revoke(ui: Ui, request: Request, caller: Caller) -> Response:
    await ui.form(request, caller)
    if caller.principal.user_id != LOCAL_USER:
        raise Refused(403, "Only the data dir's owner revokes tokens (memtrove token revoke, or this page as its owner).")
    store = ui.runtime.app.adapters.store()
    try:
        await anyio.to_thread.run_sync(RevokeToken(store), request.path_params["token_id"])
    except MemtroveError as exc:
        raise ToolFailed(exc.message, getattr(exc, "field", None)) from exc
    return RedirectResponse(f"{PREFIX}/audit?revoked={request.path_params['token_id']}", status_code=303)


ROUTES = [
    ("/health", health, ["GET"]),
    ("/audit", audit, ["GET"]),
    ("/tokens/{token_id}/revoke", revoke, ["POST"]),
]
