"""Who is calling, per tool call, as the transport says: HTTP puts the principal its bearer token maps
to in the request's ASGI state (entrypoints/auth.py); stdio and the local socket are the local owner.
``run_tool`` opens the call's scope (adapters/request_scope.py) with it; use cases read it through
their ``Identity`` port."""

from __future__ import annotations

from typing import Any

from domain.access.principal import Principal

STATE_KEY = "memtrove_principal"
VIA_KEY = "memtrove_via"  # the client a request came through (its token's id), when known


def transport_principal(ctx: Any, local: Principal) -> Principal:
    """The principal of the HTTP request a call came on (set by the auth middleware), else the local owner."""
    request = getattr(getattr(ctx, "request_context", None), "request", None)
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    found = state.get(STATE_KEY) if isinstance(state, dict) else None
    return found if isinstance(found, Principal) else local


def transport_via(ctx: Any) -> str | None:
    """The client (token id) of the HTTP request a call came on, if the auth middleware named one."""
    request = getattr(getattr(ctx, "request_context", None), "request", None)
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    found = state.get(VIA_KEY) if isinstance(state, dict) else None
    return found if isinstance(found, str) else None
