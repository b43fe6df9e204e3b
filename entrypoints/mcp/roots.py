"""The roots a client declares (MCP ``roots/list``), asked on the request's own channel, and whether a
call came over HTTP (where a client's roots name paths on its own machine, not the server's)."""

from __future__ import annotations

from typing import Any

import anyio.from_thread
from loguru import logger
from mcp.shared.message import ServerMessageMetadata
from mcp.types import ListRootsRequest, ListRootsResult


def client_roots(ctx: Any) -> list[str] | None:
    """The URIs of the client's roots; None when it declares the capability not, or cannot answer."""
    if ctx is None:
        return None
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    session = ctx.session
    try:
        # Asked on this request's own channel (the only back-channel some transports have).
        roots = anyio.from_thread.run(lambda: session.send_request(
            ListRootsRequest(), ListRootsResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id)))
    except Exception as exc:  # noqa: BLE001 - a client that cannot answer has declared no roots
        logger.debug("roots_unavailable error={}", exc)
        return None
    return [str(r.uri) for r in roots.roots]


def over_http(ctx: Any) -> bool:
    """Whether the call came over HTTP (its context holds the HTTP request), even as the local owner (a
    loopback server without tokens); stdio and the local socket hold none."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except (AttributeError, ValueError):  # outside a request: not a call over HTTP
        return False
    return request is not None
