"""Streamable HTTP at /mcp/ with GET /health beside it; Host/Origin checks and an optional bearer token."""

from __future__ import annotations

import hmac
import time
from datetime import datetime, timezone
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from config.settings import Settings, is_loopback
from domain.errors import MemtroveError
from entrypoints.mcp_server import VERSION
from entrypoints.runtime import Runtime

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


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


class BearerTokenMiddleware:
    """Every HTTP request must carry ``Authorization: Bearer <token>`` (401 otherwise)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.expected):
                response = JSONResponse({"error": "unauthorized", "message": "missing or wrong bearer token"},
                                        status_code=401, headers={"WWW-Authenticate": 'Bearer realm="memtrove"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def health_report(runtime: Runtime) -> tuple[dict[str, Any], bool]:
    checks: dict[str, Any] = {}
    healthy = True
    for name, probe in (("metadata_store", lambda: runtime.app.adapters.store().stored_profile()),
                        ("vector_index", lambda: (runtime.ensure_ready(),
                                                  runtime.app.adapters.vectors().count("memory")))):
        started = time.perf_counter()
        try:
            probe()
            checks[name] = {"status": "healthy", "latency_ms": round((time.perf_counter() - started) * 1000, 1)}
        except MemtroveError as exc:
            healthy = False
            checks[name] = {"status": "unhealthy", "error": exc.message}
    checks["embedder"] = {"status": "configured", **runtime.app.adapters.embedder().describe()}
    return {
        "status": "healthy" if healthy else "unhealthy", "service": "memtrove", "version": VERSION,
        "checks": checks, "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }, healthy


def build_http_app(server: MCPServer, runtime: Runtime, host: str) -> ASGIApp:
    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        report, healthy = await anyio.to_thread.run_sync(health_report, runtime)
        return JSONResponse(report, status_code=200 if healthy else 503)

    app: ASGIApp = server.streamable_http_app(
        streamable_http_path="/mcp/", host=host, transport_security=transport_security(runtime.settings, host))
    token = runtime.settings.http_token
    return BearerTokenMiddleware(app, token) if token else app


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]
