"""``memtrove token create|list|revoke`` run as real processes on a data dir: the secrets it prints name
their principals (through AuthMiddleware over the store the CLI wrote, and through a running server),
listings show no secret, a revoked token stops authenticating at once and the other keeps working;
bad input exits 2 with one line naming the field, an unknown token 1."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from adapters.sql.ledger import SqlStore
from adapters.sql.store import make_engine
from domain.access.principal import Principal, local_principal
from entrypoints.auth import AuthMiddleware, http_authenticator
from entrypoints.mcp.identity import STATE_KEY
from tests.support.mcp_procs import http_server, run_cli

pytestmark = pytest.mark.slow
SHARED = "the-owners-shared-token"
ALICE = ["--user", "alice", "--team", "eng", "--team", "ops", "--org", "acme", "--clearance", "sensitive",
         "--project", "web", "--label", "alice's laptop"]


def create(data: Path, args: list[str]) -> tuple[str, str]:
    done = run_cli(["token", "create", *args], data)
    assert done.returncode == 0, done.stderr
    token_id = re.fullmatch(r"token_id: (tok_[0-9a-f]{12})\nsecret:   (mt_\S+)\n", done.stdout)
    assert token_id is not None, done.stdout
    return token_id.group(1), token_id.group(2)


def listed(data: Path) -> list[dict[str, Any]]:
    done = run_cli(["token", "list", "--json"], data)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def whoami(request: Request) -> JSONResponse:
    principal: Principal = getattr(request.state, STATE_KEY)
    return JSONResponse({"user": principal.user_id, "teams": list(principal.teams), "org": principal.org,
                         "clearance": principal.clearance, "projects": principal.projects})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def through_store(data: Path) -> Iterator[TestClient]:
    """A tiny app behind AuthMiddleware, over the store the CLI writes (opened once, as a server does)."""
    data.mkdir(parents=True, exist_ok=True)
    store = SqlStore(make_engine(f"sqlite:///{data / 'memtrove.sqlite3'}"))
    app = AuthMiddleware(Starlette(routes=[Route("/", whoami)]), http_authenticator(store, SHARED, local_principal()))
    try:
        with TestClient(app) as client:
            yield client
    finally:
        store.close()


def who(client: TestClient, secret: str) -> Any:
    got = client.get("/", headers={"Authorization": f"Bearer {secret}"})
    return got.json() if got.status_code == 200 else got.status_code


def test_tokens_are_made_listed_and_revoked(data: Path, through_store: TestClient) -> None:
    alice_id, alice = create(data, ALICE)
    bob_id, bob = create(data, ["--user", "bob"])
    assert alice != bob and alice_id != bob_id

    tokens = listed(data)
    assert [(t["token_id"], t["user"], t["teams"], t["org"], t["clearance"], t["projects"], t["label"],
             t["revoked_at"]) for t in tokens] == [
        (alice_id, "alice", ["eng", "ops"], "acme", "sensitive", ["web"], "alice's laptop", None),
        (bob_id, "bob", [], None, "normal", [], None, None)]  # no --project: no project (least privilege)
    text = run_cli(["token", "list"], data)
    assert text.returncode == 0 and alice_id in text.stdout and bob_id in text.stdout
    for shown in (json.dumps(tokens), text.stdout, text.stderr):
        assert alice not in shown and bob not in shown

    assert who(through_store, alice) == {"user": "alice", "teams": ["eng", "ops"], "org": "acme",
                                         "clearance": "sensitive", "projects": ["web"]}
    assert who(through_store, bob)["user"] == "bob" and who(through_store, SHARED)["user"] == "local"
    assert who(through_store, "mt_" + "x" * 43) == 401

    revoked = run_cli(["token", "revoke", alice_id], data)
    assert revoked.returncode == 0 and alice_id in revoked.stdout
    assert who(through_store, alice) == 401  # the next request already
    assert who(through_store, bob)["user"] == "bob"
    assert [t["revoked_at"] is not None for t in listed(data)] == [True, False]

    again = run_cli(["token", "revoke", alice_id], data)
    unknown = run_cli(["token", "revoke", "tok_000000000000"], data)
    for done, token_id in ((again, alice_id), (unknown, "tok_000000000000")):
        assert done.returncode == 1 and token_id in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("args", "field"), [
    (["--user", "alice", "--clearance", "top_secret"], "--clearance"),
    (["--user", "not a user"], "--user"),
    (["--user", "alice", "--team", "eng ops"], "--team"),
    (["--user", "alice", "--org=-acme"], "--org"),
    (["--user", "alice", "--label", "x" * 201], "--label"),
    (["--user", "alice", "--project", "*", "--project", "web"], "--project"),
    (["--user", "alice", "--project", "web site"], "--project"),
])
def test_bad_input_exits_2_with_one_line_naming_the_field(data: Path, args: list[str], field: str) -> None:
    done = run_cli(["token", "create", *args], data)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], done.stderr
    assert listed(data) == []


def test_a_token_reaches_the_projects_it_is_given_and_those_granted_later(data: Path,
                                                                         through_store: TestClient) -> None:
    none_id, none = create(data, ["--user", "bob"])
    _, every = create(data, ["--user", "carol", "--project", "*"])
    assert who(through_store, none)["projects"] == [] and who(through_store, every)["projects"] is None
    granted = run_cli(["token", "grant", none_id, "--project", "web", "--project", "api"], data)
    assert granted.returncode == 0 and granted.stdout.strip() == f"{none_id} reaches projects web, api", granted
    assert who(through_store, none)["projects"] == ["web", "api"]  # from its next request
    assert run_cli(["token", "grant", none_id, "--project", "*"], data).stdout.strip() == f"{none_id} reaches every project"
    assert who(through_store, none)["projects"] is None
    assert [t["projects"] for t in listed(data)] == [None, None]
    for args, code, named in ((["tok_000000000000", "--project", "web"], 1, "tok_000000000000"),
                              ([none_id, "--project", "*", "--project", "web"], 2, "--project"),
                              ([none_id, "--project", "bad name"], 2, "--project"),
                              (["tok_x", "--project", "web"], 2, "TOKEN_ID")):
        done = run_cli(["token", "grant", *args], data)
        assert done.returncode == code and named in done.stderr and len(done.stderr.strip().splitlines()) == 1, done
    assert run_cli(["token", "revoke", none_id], data).returncode == 0
    assert run_cli(["token", "grant", none_id, "--project", "web"], data).returncode == 1


def test_the_cli_works_beside_a_running_server(data: Path) -> None:
    """A server holds the data dir: tokens made and revoked meanwhile count from its next request."""
    with http_server(data, token=SHARED) as server:
        token_id, secret = create(data, ["--user", "carol", "--team", "ops"])

        def status(token: str) -> int:
            return httpx.get(f"{server.base_url}/health", headers={"Authorization": f"Bearer {token}"},
                             timeout=30).status_code

        assert status(secret) == 200 and status(SHARED) == 200
        assert run_cli(["token", "revoke", token_id], data).returncode == 0
        assert status(secret) == 401 and status(SHARED) == 200
        assert server.process.poll() is None
