"""AuthMiddleware (entrypoints/auth.py) around a tiny Starlette app, tokens in the in-memory store: 401
without, with a wrong or with a revoked secret; the principal of a right one (or of the shared token)
in the request's state."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from adapters.memory.tokens import InMemoryTokens
from domain.access.principal import Principal, local_principal
from domain.access.tokens import CreateToken, RevokeToken
from domain.errors import ValidationError
from entrypoints.auth import AuthMiddleware, bearer_secret, http_authenticator, local_until_tokens, Who
from entrypoints.mcp.identity import STATE_KEY, VIA_KEY

ALICE = Principal("alice", teams=("eng",), org="acme", clearance="sensitive", projects=("web",))
OWNER = local_principal("highly_sensitive")
SHARED = "the-owners-shared-token"
UNAUTHORIZED = {"error": "unauthorized", "message": "missing, wrong or revoked bearer token"}


async def whoami(request: Request) -> JSONResponse:
    p: Principal = getattr(request.state, STATE_KEY)
    return JSONResponse({"user_id": p.user_id, "teams": list(p.teams), "org": p.org, "clearance": p.clearance,
                         "projects": None if p.projects is None else list(p.projects)})


def client(store: InMemoryTokens, shared: str | None = SHARED, anonymous: Any = None) -> TestClient:
    app = Starlette(routes=[Route("/whoami", whoami)])
    return TestClient(AuthMiddleware(app, http_authenticator(store, shared, OWNER), anonymous))


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def store() -> InMemoryTokens:
    return InMemoryTokens()


@pytest.mark.parametrize("headers", [{}, bearer("mt_wrong"), bearer(SHARED + "x"), bearer(SHARED[:-1]),
                                     {"Authorization": f"Basic {SHARED}"}, {"Authorization": "Bearer "},
                                     {"Authorization": SHARED}])
def test_no_right_secret_is_refused_with_401(store: InMemoryTokens, headers: dict[str, str]) -> None:
    CreateToken(store)(ALICE)
    with client(store) as http:
        got = http.get("/whoami", headers=headers)
    assert got.status_code == 401 and got.json() == UNAUTHORIZED
    assert got.headers["www-authenticate"] == 'Bearer realm="memtrove"'


def test_a_tokens_secret_delivers_its_principal(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(ALICE)
    with client(store) as http:
        got = http.get("/whoami", headers=bearer(issued.secret))
        lower = http.get("/whoami", headers={"authorization": f"bearer {issued.secret}"})
    assert got.status_code == 200 and lower.json() == got.json() == {
        "user_id": "alice", "teams": ["eng"], "org": "acme", "clearance": "sensitive", "projects": ["web"]}


def test_a_revoked_secret_is_refused_on_the_next_request(store: InMemoryTokens) -> None:
    issued, other = CreateToken(store)(ALICE), CreateToken(store)(ALICE)
    with client(store) as http:
        assert http.get("/whoami", headers=bearer(issued.secret)).status_code == 200
        RevokeToken(store)(issued.token_id)
        refused = http.get("/whoami", headers=bearer(issued.secret))
        assert refused.status_code == 401 and refused.json() == UNAUTHORIZED
        assert http.get("/whoami", headers=bearer(other.secret)).status_code == 200


def test_the_shared_token_names_the_shared_principal(store: InMemoryTokens) -> None:
    with client(store) as http:
        got = http.get("/whoami", headers=bearer(SHARED))
    assert got.status_code == 200 and got.json()["user_id"] == "local"
    assert got.json()["clearance"] == "highly_sensitive" and got.json()["projects"] is None


def test_without_a_shared_token_only_stored_tokens_count(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(ALICE)
    with client(store, shared=None) as http:
        assert http.get("/whoami", headers=bearer(SHARED)).status_code == 401
        assert http.get("/whoami").status_code == 401
        assert http.get("/whoami", headers=bearer(issued.secret)).json()["user_id"] == "alice"


def test_a_loopback_server_without_tokens_is_its_owners_until_a_token_exists(store: InMemoryTokens) -> None:
    with client(store, shared=None, anonymous=local_until_tokens(store, OWNER)) as http:
        assert http.get("/whoami").json()["user_id"] == "local"
        assert http.get("/whoami", headers=bearer("mt_wrong")).json()["user_id"] == "local"
        issued = CreateToken(store)(ALICE)
        assert http.get("/whoami").status_code == 401
        assert http.get("/whoami", headers=bearer(issued.secret)).json()["user_id"] == "alice"
    RevokeToken(store)(issued.token_id)  # its last token revoked: the server does not reopen (no cache here)
    with client(store, shared=None, anonymous=local_until_tokens(store, OWNER)) as http:
        assert http.get("/whoami").status_code == 401
        assert http.get("/whoami", headers=bearer(issued.secret)).status_code == 401


def test_a_token_never_names_the_local_owner_or_every_project(store: InMemoryTokens) -> None:
    with pytest.raises(ValidationError) as local:
        CreateToken(store)(Principal("local"))
    with pytest.raises(ValidationError) as every:
        CreateToken(store)(Principal("bob", projects=("*",)))
    assert (local.value.field, every.value.field) == ("user_id", "project") and store.list_tokens() == []


class Recorder:
    """An ASGI app that only keeps the scopes it is called with."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)


def run_raw(middleware: AuthMiddleware, scope: dict[str, Any]) -> list[dict[str, Any]]:
    """One ASGI call of ``middleware``: the messages it sent."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(middleware, scope, receive, send)
    return sent


def http_scope(headers: list[tuple[bytes, bytes]], **extra: Any) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": "/", "headers": headers, "query_string": b"", **extra}


def test_the_principal_goes_in_a_new_state_dict(store: InMemoryTokens) -> None:
    issued = CreateToken(store)(ALICE)
    lookups: list[int] = []

    def authenticate(secret: str) -> Who | None:
        lookups.append(threading.get_ident())
        return http_authenticator(store, None, OWNER)(secret)

    app = Recorder()
    middleware = AuthMiddleware(app, authenticate)
    server_state: dict[str, Any] = {"other": 1}
    headers = [(b"authorization", f"Bearer {issued.secret}".encode())]
    run_raw(middleware, http_scope(headers, state=server_state))
    run_raw(middleware, http_scope(headers))  # no state at all: one is made
    via = {VIA_KEY: issued.token_id}  # the client, named by its token's id (the audit log says it)
    assert [s["state"] for s in app.scopes] == [{"other": 1, STATE_KEY: ALICE, **via}, {STATE_KEY: ALICE, **via}]
    assert server_state == {"other": 1}  # the server's dict is not written to
    assert lookups and threading.get_ident() not in lookups  # the store lookup ran off the event loop


def test_a_websocket_without_a_right_secret_is_closed_and_lifespan_passes(store: InMemoryTokens) -> None:
    app = Recorder()
    middleware = AuthMiddleware(app, http_authenticator(store, SHARED, OWNER))
    sent = run_raw(middleware, {"type": "websocket", "path": "/", "headers": [(b"authorization", b"Bearer no")]})
    assert sent == [{"type": "websocket.close", "code": 1008}] and app.scopes == []
    run_raw(middleware, {"type": "lifespan"})
    assert app.scopes == [{"type": "lifespan"}]


def test_the_first_authorization_header_is_the_one_read() -> None:
    assert bearer_secret(http_scope([(b"authorization", b"Bearer one"), (b"authorization", b"Bearer two")])) == "one"
    assert bearer_secret(http_scope([(b"authorization", b"Bearer \xff\xfe")])) == "\udcff\udcfe"
    assert bearer_secret(http_scope([(b"authorization", b"Token x")])) is None
    assert bearer_secret(http_scope([])) is None
