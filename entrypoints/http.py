"""Streamable HTTP at /mcp (and /mcp/) with GET /health, /metrics and the page at /ui beside it; Host/Origin checks, a body limit, a bearer token."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from config.settings import Settings, is_loopback
from domain.access.principal import LOCAL_USER, Principal, local_principal
from domain.errors import MemtroveError
from domain.artifacts.input import MAX_CONTENT
from entrypoints.auth import SHARED_TOKEN, AuthMiddleware, http_authenticator, local_until_tokens
from entrypoints.mcp.identity import STATE_KEY, VIA_KEY
from adapters.metrics import CONTENT_TYPE as METRICS_TYPE
from entrypoints.mcp.server import VERSION
from entrypoints.runtime import Runtime
from entrypoints.web.app import MAX_PAGE_BODY, UiFirst, build_ui
from entrypoints.web.session import Sessions

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]

MCP_PATH = "/mcp"
# The largest body a tool needs: artifact_ingest's content (MAX_CONTENT bytes of UTF-8) written as
# JSON, where the worst case escapes one byte as six ("\u0001"), plus 1 MiB for its other fields
# (about 24,000 characters at most, 12 bytes each as escaped surrogate pairs) and the JSON-RPC
# envelope. 6 * 10,000,000 + 1,048,576 = 61,048,576 bytes.
MAX_BODY_BYTES = 6 * MAX_CONTENT + 1024 * 1024
INVALID_REQUEST = -32600  # JSON-RPC


def transport_security(settings: Settings, host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection: only Host and Origin values that name this server are accepted."""
    extra_hosts = _split(settings.memtrove_allowed_hosts)
    extra_origins = _split(settings.memtrove_allowed_origins)
    hosts = [*LOOPBACK_HOSTS, *extra_hosts]
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        hosts += [f"{host}:*", host]
    if host in ("0.0.0.0", "::") and not extra_hosts:
        # Any name may reach a wildcard bind; the required bearer token is what protects it then.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[*LOOPBACK_ORIGINS, *extra_origins])


class McpPathAlias:
    """``/mcp/`` is served as ``/mcp`` itself: Starlette would answer it with a 307 redirect.

    A redirect fails clients that do not follow it on POST and the conformance suite's
    DNS-rebinding check (it wants 4xx for a bad Host, 2xx for a good one, never 3xx).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH + "/":
            scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """A body over ``limit`` bytes (declared or streamed) gets a JSON-RPC error naming the limit.

    The SDK's own check (kept, at the same limit) answers a plain-text 413 that MCP clients can
    only report as "Server returned an error response"; a JSON-RPC error reaches the caller.
    The body is read here once and handed on whole, as the SDK's check would read it anyway.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send, int(declared), more=True)
            return
        chunks: list[bytes] = []
        size = 0
        replay: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                replay.append(message)  # a disconnect: handed on, after what came, for the app to see
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send, None, more=message.get("more_body", False))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        complete = not replay
        replay.insert(0, {"type": "http.request", "body": b"".join(chunks), "more_body": not complete})

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, declared: int | None, more: bool) -> None:
        # The rest of the body is read and dropped first: a server that closes with unread bytes
        # makes the kernel reset the connection, and the client loses the answer (httpx: ReadError).
        # A client that keeps sending past another `limit` bytes gets the answer and the close anyway.
        drained = 0
        while more and drained <= self.limit:
            message = await receive()
            drained += len(message.get("body", b""))
            more = message["type"] == "http.request" and message.get("more_body", False)
        got = f", got {declared} bytes" if declared is not None else ""
        text = (f"Request body too large: the limit is {self.limit} bytes{got} (artifact_ingest content "
                f"is at most {MAX_CONTENT} bytes of UTF-8)")
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": text}}
        response = Response(json.dumps(body), status_code=413, media_type="application/json",
                            headers={"Connection": "close"} if more else None)
        await response(scope, receive, send)


EMBEDDER_CHECK_EVERY = 30.0  # seconds


def _check(probe: Callable[[], object], **shown: Any) -> tuple[dict[str, Any], bool]:
    """One dependency's check: its status and latency (or its error), with what names it."""
    started = time.perf_counter()
    try:
        probe()
    except MemtroveError as exc:
        return {"status": "unhealthy", **shown, "error": exc.message}, False
    return {"status": "healthy", **shown, "latency_ms": round((time.perf_counter() - started) * 1000, 1)}, True


class EmbedderCheck:
    """The embedder's check, made at most every EMBEDDER_CHECK_EVERY seconds (each costs a call to it:
    a paid API call, for some), on the model itself (not counted in the metrics' embeddings)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._lock = threading.Lock()
        self._last: tuple[dict[str, Any], bool] | None = None
        self._at = float("-inf")

    def __call__(self) -> tuple[dict[str, Any], bool]:
        with self._lock:
            if self._last is None or time.monotonic() - self._at >= EMBEDDER_CHECK_EVERY:
                model = self.runtime.app.adapters.model()
                named = {k: model.describe().get(k) for k in ("provider", "model", "dimensions")}
                self._last, self._at = _check(lambda: model.embed_query("health check"), **named), time.monotonic()
            return self._last


def health_report(runtime: Runtime, embedder: Callable[[], tuple[dict[str, Any], bool]]
                  ) -> tuple[dict[str, Any], bool]:
    """Spec 000 §10.4: each dependency checked now (the embedder: by ``embedder``). Without the embedder,
    reads and word searches still work: degraded (200); without the store or the index: unhealthy (503)."""
    adapters = runtime.app.adapters
    checks, ok = {}, {}
    for name, probe in (("metadata_store", lambda: adapters.store().stored_profile()),
                        ("vector_index", lambda: (runtime.ensure_ready(), adapters.vectors().count("memory")))):
        checks[name], ok[name] = _check(probe)
    checks["embedder"], ok["embedder"] = embedder()
    healthy = ok["metadata_store"] and ok["vector_index"]
    return {
        "status": "unhealthy" if not healthy else "healthy" if ok["embedder"] else "degraded",
        "service": "memtrove", "version": VERSION,
        "checks": checks, "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }, healthy


def build_http_app(server: MCPServer, runtime: Runtime, host: str) -> ASGIApp:
    embedder = EmbedderCheck(runtime)

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        report, healthy = await anyio.to_thread.run_sync(health_report, runtime, embedder)
        return JSONResponse(report, status_code=200 if healthy else 503)

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        clients = own_clients(request.scope.get("state"))
        body = await anyio.to_thread.run_sync(runtime.metrics.exposition, clients)
        return Response(body, media_type=METRICS_TYPE)

    # The SDK's limit is a parameter: raised to ours, so BodyLimitMiddleware is the one that answers.
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=host, transport_security=transport_security(runtime.settings, host),
        max_request_body_size=MAX_BODY_BYTES)
    app = McpPathAlias(BodyLimitMiddleware(app))
    store = runtime.app.adapters.store()
    owner = local_principal(runtime.settings.memtrove_local_clearance)
    shared = runtime.settings.http_token
    # The caller is known first: nobody unauthenticated gets a body buffered. Without a shared token (a
    # loopback-only server: check_serving) a request without a secret is the owner's until a token exists.
    authenticate = http_authenticator(store, shared, owner)
    anonymous = None if shared else local_until_tokens(store, owner)
    page = build_ui(runtime, Sessions(authenticate, anonymous), transport_security(runtime.settings, host))
    # The page has a body limit of its own (an upload of files, 20 MB in all): the MCP one does not see it.
    return UiFirst(BodyLimitMiddleware(page, MAX_PAGE_BODY), AuthMiddleware(app, authenticate, anonymous))


def own_clients(state: object) -> list[str] | None:
    """Whose per-client series a /metrics caller sees: the server's owner (the shared token, or a loopback
    server before tokens) every client's (None); a token's holder only its own token's and the page's
    signed in with it; anyone else none."""
    state = state if isinstance(state, dict) else {}
    principal, via = state.get(STATE_KEY), state.get(VIA_KEY)
    if isinstance(principal, Principal) and principal.user_id == LOCAL_USER:
        return None
    return [via, f"page ({via})"] if isinstance(via, str) and via != SHARED_TOKEN else []


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
