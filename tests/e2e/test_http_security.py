"""The HTTP transport's guards, against a real server subprocess: /health, Host/Origin checks, bearer token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e import scenario
from tests.support.mcp_procs import HttpServer, blocking, free_port, http_server, http_session, run_cli

pytestmark = pytest.mark.slow

IN_PROCESS = {"MEMTROVE_SHARED": "false"}  # the server itself, not a bridge to a shared one

TOKEN = "s3cret"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "e2e-security", "version": "1.0"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PATHS = ["/mcp", "/mcp/"]  # both served directly: a redirect would answer 3xx where 4xx or 2xx is due


def post_initialize(server: HttpServer, path: str = "/mcp", **headers: str) -> httpx.Response:
    return httpx.post(server.base_url + path, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=20.0,
                      follow_redirects=False)


def assert_initialized(response: httpx.Response) -> None:
    assert response.status_code == 200, (response.status_code, response.text)
    assert '"serverInfo"' in response.text and '"memtrove"' in response.text, response.text


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("e2e-http-open")
    with http_server(root / "data", IN_PROCESS, stderr_path=root / "stderr.log") as running:
        yield running


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("e2e-http-token")
    with http_server(root / "data", IN_PROCESS, token=TOKEN, stderr_path=root / "stderr.log") as running:
        yield running


# ------------------------------------------------------------------------------------- /health

def test_health_reports_healthy_with_checks(server: HttpServer) -> None:
    response = httpx.get(f"{server.base_url}/health", timeout=20.0)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    report = response.json()
    assert report["status"] == "healthy" and report["service"] == "memtrove"
    checks = report["checks"]
    assert checks["metadata_store"]["status"] == "healthy"
    assert checks["vector_index"]["status"] == "healthy"
    assert isinstance(checks["metadata_store"]["latency_ms"], (int, float))
    assert checks["embedder"]["provider"] == "local" and checks["embedder"]["dimensions"] == 384
    assert scenario.UTC_TS.match(report["timestamp"]), report["timestamp"]


# ----------------------------------------------------------------------------- DNS rebinding

@pytest.mark.parametrize("path", PATHS)
def test_loopback_host_and_origin_are_accepted(server: HttpServer, path: str) -> None:
    assert_initialized(post_initialize(server, path))
    assert_initialized(post_initialize(server, path, Host=f"localhost:{server.port}"))
    assert_initialized(post_initialize(server, path, Origin=f"http://127.0.0.1:{server.port}"))
    assert_initialized(post_initialize(server, path, Origin="http://localhost:5173"))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{80}", "127.0.0.1.evil.example"])
def test_foreign_host_header_is_rejected(server: HttpServer, host: str, path: str) -> None:
    response = post_initialize(server, path, Host=host)
    assert response.status_code == 421, (response.status_code, response.text)
    assert "Invalid Host header" in response.text
    assert "serverInfo" not in response.text


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("origin", ["http://evil.example", "http://localhost.evil.example", "null"])
def test_foreign_origin_is_rejected(server: HttpServer, origin: str, path: str) -> None:
    response = post_initialize(server, path, Origin=origin)
    assert response.status_code == 403, (response.status_code, response.text)
    assert "Invalid Origin header" in response.text
    assert "serverInfo" not in response.text


# --------------------------------------------------------------------- exposure without a token

@pytest.mark.parametrize("how", ["flag", "env"])
def test_wildcard_bind_without_token_refuses_to_start(tmp_path: Path, how: str) -> None:
    port = str(free_port())
    if how == "flag":
        args, env = ["serve", "--transport", "http", "--host", "0.0.0.0", "--port", port], IN_PROCESS
    else:
        args, env = ["serve", "--transport", "http", "--port", port], {**IN_PROCESS, "MEMTROVE_HOST": "0.0.0.0"}
    started = time.monotonic()
    done = run_cli(args, tmp_path / "data", env, timeout=30.0)
    elapsed = time.monotonic() - started
    assert done.returncode != 0, done
    assert "MEMTROVE_HTTP_TOKEN" in done.stderr, done.stderr
    assert "0.0.0.0" in done.stderr
    assert done.stdout == ""
    assert elapsed < 20.0, f"took {elapsed:.1f}s to refuse"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0)


# ---------------------------------------------------------------------------------- bearer token

def test_request_without_token_is_unauthorized(guarded: HttpServer) -> None:
    response = post_initialize(guarded)
    assert response.status_code == 401, (response.status_code, response.text)
    assert response.headers.get("www-authenticate", "").startswith("Bearer")
    assert response.json()["error"] == "unauthorized"
    assert TOKEN not in response.text


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("authorization", ["Bearer wrong", f"Bearer {TOKEN}x", TOKEN, f"Basic {TOKEN}", "Bearer"])
def test_request_with_wrong_token_is_unauthorized(guarded: HttpServer, authorization: str, path: str) -> None:
    response = post_initialize(guarded, path, Authorization=authorization)
    assert response.status_code == 401, (authorization, response.status_code, response.text)
    assert "serverInfo" not in response.text


def test_health_needs_the_token_too(guarded: HttpServer) -> None:
    assert httpx.get(f"{guarded.base_url}/health", timeout=20.0).status_code == 401
    response = httpx.get(f"{guarded.base_url}/health", headers=guarded.auth_headers(), timeout=20.0)
    assert response.status_code == 200 and response.json()["status"] == "healthy"


def test_right_token_gives_a_working_mcp_client(guarded: HttpServer) -> None:
    for path in PATHS:
        assert_initialized(post_initialize(guarded, path, Authorization=f"Bearer {TOKEN}"))
    with blocking(http_session(guarded.mcp_url, token=TOKEN)) as client:
        client.run(scenario.check_tools)
        stored = client.run(scenario.store, "User prefers dark mode in every editor", "preference", 0.9)
        found = client.run(scenario.search, "what colour theme does the user like", limit=3)
        assert scenario.ids(found)[0] == stored["id"]


def test_mcp_client_without_token_cannot_connect(guarded: HttpServer) -> None:
    connected = False
    with pytest.raises(Exception) as failure:  # noqa: PT011 - the SDK wraps its MCPError in exception groups
        with blocking(http_session(guarded.mcp_url)):
            connected = True
    assert not connected
    assert "Server returned an error response" in repr(failure.value) or "401" in repr(failure.value), failure.value
