"""Who is calling over HTTP: ``Authorization: Bearer <secret>`` names a principal, which the request's
tool calls run as (entrypoints/mcp/identity.py reads it from the ASGI state); 401 otherwise."""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from domain.access.principal import Principal
from domain.access.tokens import Authenticate
from domain.ports.identity import TokenStore
from entrypoints.mcp.identity import STATE_KEY, VIA_KEY

@dataclass(frozen=True, slots=True)
class Who:
    """A request's caller: its principal, and the client it came through (a token's id, "shared token")."""

    principal: Principal
    via: str | None = None


Authenticator = Callable[[str], Who | None]
Anonymous = Callable[[], Principal | None]
SHARED_TOKEN = "shared token"  # the client name of MEMTROVE_HTTP_TOKEN's requests
TOKENS_SEEN_FOR = 60.0  # seconds a token once seen is assumed to exist still (see local_until_tokens)


class AuthMiddleware:
    """Every HTTP request names its principal by a bearer secret; a missing, wrong or revoked one gets
    401 (a websocket: closed), before any body is read. ``authenticate`` is a lookup (a store read):
    it runs off the event loop. ``anonymous``, when given, says who a request without a valid secret
    is, if anyone (None: refused)."""

    def __init__(self, app: ASGIApp, authenticate: Authenticator, anonymous: Anonymous | None = None) -> None:
        self.app = app
        self.authenticate = authenticate
        self.anonymous = anonymous

    def who(self, secret: str | None) -> Who | None:
        found = self.authenticate(secret) if secret else None
        if found is None and self.anonymous is not None:
            local = self.anonymous()
            return None if local is None else Who(local)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan: nobody is calling
            await self.app(scope, receive, send)
            return
        caller = await anyio.to_thread.run_sync(self.who, bearer_secret(scope))
        if caller is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            response = JSONResponse({"error": "unauthorized", "message": "missing, wrong or revoked bearer token"},
                                    status_code=401, headers={"WWW-Authenticate": 'Bearer realm="memtrove"'})
            await response(scope, receive, send)
            return
        # A new state dict: the server's own may be shared with other requests.
        state = {**scope.get("state", {}), STATE_KEY: caller.principal}
        if caller.via is not None:
            state[VIA_KEY] = caller.via
        await self.app({**scope, "state": state}, receive, send)


def bearer_secret(scope: Scope) -> str | None:
    """The secret of the request's first ``Authorization: Bearer`` header; None without one. Bytes that are
    not UTF-8 are kept (as surrogates), so no two headers read as one secret."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, given = value.partition(b" ")
            secret = given.strip()
            return secret.decode("utf-8", "surrogateescape") if scheme.lower() == b"bearer" and secret else None
    return None


def http_authenticator(store: TokenStore, shared_token: str | None, shared_principal: Principal) -> Authenticator:
    """The shared MEMTROVE_HTTP_TOKEN names ``shared_principal``; any other secret, the principal of its
    token in the store (while not revoked), through that token."""
    shared = shared_token.encode("utf-8") if shared_token else None
    from_store = Authenticate(store)

    def authenticate(secret: str) -> Who | None:
        if shared is not None and hmac.compare_digest(secret.encode("utf-8", "surrogateescape"), shared):
            return Who(shared_principal, SHARED_TOKEN)
        token = from_store.token(secret)
        return None if token is None else Who(token.principal, token.token_id)

    return authenticate


def local_until_tokens(store: TokenStore, local: Principal) -> Anonymous:
    """For a loopback server without MEMTROVE_HTTP_TOKEN (settings.check_serving): a request without a
    valid secret is its local owner until a token is made (revoking it later does not reopen the server:
    a revoked token still counts); from then on, refused. Once seen, a token is
    assumed to exist for TOKENS_SEEN_FOR seconds without asking the store (a revoked secret is refused
    at once regardless: it is looked up on its own)."""
    seen = [float("-inf")]

    def anonymous() -> Principal | None:
        if time.monotonic() - seen[0] < TOKENS_SEEN_FOR:
            return None
        if store.list_tokens():  # once one was made (even if revoked since), tokens are required
            seen[0] = time.monotonic()
            return None
        return local

    return anonymous
