"""Health (counts, sizes, embedding profile, backlog, latency percentiles, items over time) and the audit
log (filtered by actor, action, kind and time), with the tokens and a switch to revoke each (the data
dir's owner only: a token's principal sees its own entries and no tokens)."""

from __future__ import annotations

from datetime import datetime, timezone

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from adapters import request_scope
from domain.access.audit import AuditQuery, ReadAudit
from domain.access.principal import LOCAL_USER
from domain.access.tokens import ListTokens, RevokeToken
from domain.errors import MemtroveError
from entrypoints.web.app import PREFIX, Refused, Ui
from entrypoints.web.caller import ToolFailed
from entrypoints.web.session import Caller

LATENCIES = ("memtrove_tool_latency_seconds", "memtrove_search_latency_seconds")


async def health(ui: Ui, request: Request, caller: Caller) -> Response:
    stats = await ui.tool(caller, "store_stats")
    latency = latency_rows(ui.runtime.metrics.registry)
    return ui.page(request, caller, "health.html", stats=stats, latency=latency,
                   bars=bar_chart([(row["name"], row["p95_ms"] or 0.0) for row in latency]))


def latency_rows(registry: object) -> list[dict[str, object]]:
    """Per tool (and search mode), calls and the p50/p95 latency read off the histogram's buckets (the
    bucket's upper bound: an upper estimate, as Prometheus' histogram_quantile would interpolate)."""
    rows = []
    for family in registry.collect():  # type: ignore[attr-defined]
        if family.name not in LATENCIES:
            continue
        series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))
                series.setdefault(labels, []).append((float(sample.labels["le"]), sample.value))
        for labels, buckets in series.items():
            buckets.sort()
            total = buckets[-1][1] if buckets else 0
            if not total:
                continue
            name = " ".join(v for _, v in labels) + (" (search)" if "search" in family.name else "")
            rows.append({"name": name, "calls": int(total), "p50_ms": _quantile(buckets, total, 0.5),
                         "p95_ms": _quantile(buckets, total, 0.95)})
    return sorted(rows, key=lambda r: str(r["name"]))


def _quantile(buckets: list[tuple[float, float]], total: float, q: float) -> float | None:
    for bound, count in buckets:
        if count >= q * total:
            return None if bound == float("inf") else round(bound * 1000, 1)
    return None


def bar_chart(values: list[tuple[str, float]]) -> list[dict[str, object]]:
    """Bars of an inline SVG: each value's width out of 100 (the largest fills it)."""
    top = max((v for _, v in values), default=0.0) or 1.0
    return [{"label": label, "value": value, "width": round(100 * value / top, 1)} for label, value in values]


async def audit(ui: Ui, request: Request, caller: Caller) -> Response:
    params = request.query_params
    asked = {k: params.get(k, "").strip() for k in ("actor", "action", "collection", "since", "until", "via")}
    query = AuditQuery(**{k: v or None for k, v in asked.items()}, limit=200)
    owner = caller.principal.user_id == LOCAL_USER
    store = ui.runtime.app.adapters.store()

    def read() -> tuple[list, list, list]:
        with request_scope.scope(caller.principal):
            reader = ReadAudit(store, request_scope.current)
            tokens = ListTokens(store)() if owner else []
            return reader(query), list(reader.actors()), tokens
    try:
        entries, actors, tokens = await anyio.to_thread.run_sync(read)
    except MemtroveError as exc:
        raise ToolFailed(exc.message, getattr(exc, "field", None)) from exc
    usage = client_usage(ui.runtime.metrics, [t.token_id for t in tokens])
    return ui.page(request, caller, "audit.html", entries=entries, asked=asked, actors=actors, tokens=tokens,
                   owner=owner, usage=usage)


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
