"""The page's sign-in against a real server with tokens made by the CLI: a token's many sign-ins end only its own
oldest sessions (never another token's), failed sign-ins from one address are throttled, and /ui/login carries
the page's Content-Security-Policy (no framing) like every other page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from entrypoints.web.session import FAILED_LOGINS, SESSIONS_PER_CLIENT
from tests.support.mcp_procs import HttpServer, http_server, run_cli

pytestmark = pytest.mark.slow
SHARED = "the-owners-shared-token"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, dict[str, str]]]:
    data = tmp_path_factory.mktemp("ui-sessions") / "data"
    secrets = {}
    for user in ("bob", "carol"):
        made = run_cli(["token", "create", "--user", user], data)
        assert made.returncode == 0, made.stderr
        secrets[user] = re.search(r"secret:\s+(\S+)", made.stdout).group(1)  # type: ignore[union-attr]
    with http_server(data, token=SHARED) as server:
        yield server, secrets


def sign_in(server: HttpServer, secret: str) -> httpx.Response:
    return httpx.post(f"{server.base_url}/ui/login?next=/ui/search", data={"token": secret}, timeout=30,
                      follow_redirects=False)


def signed_in(server: HttpServer, session: str) -> bool:
    got = httpx.get(f"{server.base_url}/ui/memories", cookies={"memtrove_session": session}, timeout=30,
                    follow_redirects=False)
    assert got.status_code in (200, 303), got
    return got.status_code == 200


def test_the_sign_in_page_carries_the_pages_security_headers(world: tuple[HttpServer, dict[str, str]]) -> None:
    server, _ = world
    for got in (httpx.get(f"{server.base_url}/ui/login", timeout=30), sign_in(server, "mt_wrong")):
        assert got.status_code in (200, 401), got
        policy = got.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy and "default-src 'self'" in policy
        assert got.headers["x-content-type-options"] == "nosniff"


def test_a_tokens_many_sign_ins_never_sign_another_token_out(world: tuple[HttpServer, dict[str, str]]) -> None:
    server, secrets = world
    carol = sign_in(server, secrets["carol"])
    assert carol.status_code == 303 and "frame-ancestors 'none'" in carol.headers["content-security-policy"]
    carol_session = carol.cookies["memtrove_session"]
    bobs = []
    for _ in range(SESSIONS_PER_CLIENT + 20):
        got = sign_in(server, secrets["bob"])
        assert got.status_code == 303, got
        bobs.append(got.cookies["memtrove_session"])
    assert signed_in(server, carol_session)  # untouched by bob's sign-ins
    assert signed_in(server, bobs[-1]) and signed_in(server, bobs[-SESSIONS_PER_CLIENT])
    assert not signed_in(server, bobs[0])  # bob's own least recently used made room


def test_failed_sign_ins_from_an_address_are_throttled(world: tuple[HttpServer, dict[str, str]]) -> None:
    server, secrets = world
    for n in range(FAILED_LOGINS - 1):  # one failed already (the headers test)
        assert sign_in(server, f"mt_wrong{n}").status_code == 401
    throttled = sign_in(server, secrets["bob"])  # even the right token: not checked while throttled
    assert throttled.status_code == 429 and 1 <= int(throttled.headers["retry-after"]) <= 60, throttled
    assert "Too many failed sign-ins" in throttled.text and "frame-ancestors 'none'" in throttled.headers[
        "content-security-policy"]
    assert "memtrove_session" not in throttled.cookies
    by_header = httpx.get(f"{server.base_url}/ui/memories", headers={"Authorization": f"Bearer {secrets['bob']}"},
                          timeout=30)
    assert by_header.status_code == 200  # a session or a bearer header already held keeps working
