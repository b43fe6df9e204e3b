"""Over HTTP: /mcp and /mcp/ are both served (no redirect); bodies up to the largest tool input pass, a larger one
gets a JSON-RPC error naming the limit."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import httpx
import pytest

from domain.ids import artifact_id
from entrypoints.http import MAX_BODY_BYTES
from tests.e2e import scenario
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import HttpServer, blocking, http_server, http_session

pytestmark = pytest.mark.slow

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e-limits", "version": "1.0"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PATHS = ["/mcp", "/mcp/"]
# A paragraph of 2- and 3-byte characters among ASCII: its UTF-8 size is well above its length.
PARAGRAPH = ("Le café du port ouvre à l'aube ; les pêcheurs y boivent un crème brûlant avant la marée. "
             "Die Brücke über den Fluß wird im Frühjahr geprüft — Kosten: 12 500 €. ") * 4 + "\n\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    # A fast embedder stands in for the local model, whose ~11 pieces/s would make a 9.5 MB ingest take minutes.
    root = tmp_path_factory.mktemp("e2e-http-limits")
    with FakeOpenAIServer(default_dimensions=16) as fake:
        env = {"MEMTROVE_SHARED": "false", "MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_EMBED_MODEL": "fake-embed", "OPENAI_EMBED_DIMS": "16", "CHUNK_TARGET_TOKENS": "4000",
               # The ingest completes within its call (what is tested here is that its body got through).
               "MEMTROVE_CALL_BUDGET": "3600"}
        with http_server(root / "data", env, stderr_path=root / "stderr.log") as running:
            yield running


def post(server: HttpServer, path: str, content: bytes | Iterator[bytes], **headers: str) -> httpx.Response:
    return httpx.post(server.base_url + path, content=content, headers={**MCP_HEADERS, **headers},
                      timeout=httpx.Timeout(30.0, read=120.0), follow_redirects=False)


# ----------------------------------------------------------------------------------- the path

@pytest.mark.parametrize("path", PATHS)
def test_both_paths_are_served_directly(server: HttpServer, path: str) -> None:
    response = post(server, path, json.dumps(INITIALIZE).encode())
    assert response.status_code == 200, (response.status_code, response.headers, response.text)
    assert '"serverInfo"' in response.text


@pytest.mark.parametrize("path", PATHS)
def test_a_foreign_host_is_refused_on_both_paths(server: HttpServer, path: str) -> None:
    response = post(server, path, json.dumps(INITIALIZE).encode(), Host="evil.example")
    assert response.status_code == 421, (response.status_code, response.text)


@pytest.mark.parametrize("path", PATHS)
def test_an_mcp_client_works_on_both_paths(server: HttpServer, path: str) -> None:
    with blocking(http_session(server.base_url + path)) as client:
        client.run(scenario.check_tools)
        listed = client.run(scenario.list_memories, limit=1)
        assert listed["count"] <= 1


def test_other_paths_are_not_aliased(server: HttpServer) -> None:
    for path in ("/mcpx", "/mcp/x", "/"):
        assert post(server, path, json.dumps(INITIALIZE).encode()).status_code == 404, path


# ----------------------------------------------------------------------------------- the body

def test_nine_and_a_half_megabytes_of_multibyte_text_are_ingested(server: HttpServer) -> None:
    target = 9_500_000
    content = PARAGRAPH * (target // len(PARAGRAPH.encode()))
    content += "x" * (target - len(content.encode()))
    assert len(content.encode()) == target and len(content) < target - 100_000
    with blocking(http_session(server.base_url + "/mcp")) as client:
        ingested = client.run(scenario.call_ok, "artifact_ingest", {
            "artifact_type": "doc", "source_system": "e2e", "source_id": "nine-and-a-half", "content": content})
        assert ingested["status"] == "ingested", ingested
        assert ingested["artifact_id"] == artifact_id("e2e", "nine-and-a-half", "")
        assert ingested["content_hash"] == hashlib.sha256(content.encode()).hexdigest()


def test_the_worst_case_json_escaping_of_ten_megabytes_fits(server: HttpServer) -> None:
    """10,000,000 control characters, each escaped as six bytes, reach the tool (which refuses them as blank)."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "artifact_ingest", "arguments": {
        "artifact_type": "doc", "source_system": "e2e", "content": "\x01" * 10_000_000}}}
    with blocking(http_session(server.mcp_url)) as client:
        result = client.call("artifact_ingest", body["params"]["arguments"])
    assert result.is_error
    assert result.structured_content["error"]["field"] == "content", result.structured_content
    assert len(json.dumps(body).encode()) > 60_000_000


def assert_json_rpc_limit_error(response: httpx.Response) -> None:
    assert response.status_code == 413, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    answer = response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == -32600
    assert f"{MAX_BODY_BYTES} bytes" in answer["error"]["message"]


def test_a_declared_oversized_body_gets_a_json_rpc_error_naming_the_limit(server: HttpServer) -> None:
    response = post(server, "/mcp", b"x" * (MAX_BODY_BYTES + 1))
    assert_json_rpc_limit_error(response)
    assert f"got {MAX_BODY_BYTES + 1} bytes" in response.json()["error"]["message"]


def test_a_streamed_oversized_body_gets_the_same_error(server: HttpServer) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked, counted as it arrives
        for _ in range(MAX_BODY_BYTES // 1_000_000 + 2):
            yield b"x" * 1_000_000
    assert_json_rpc_limit_error(post(server, "/mcp/", chunks()))


def test_the_mcp_client_reports_the_limit_to_its_caller(server: HttpServer) -> None:
    with blocking(http_session(server.mcp_url)) as client:
        with pytest.raises(Exception) as refused:  # noqa: PT011 - the SDK's MCPError
            client.call("artifact_ingest", {"artifact_type": "doc", "source_system": "e2e",
                                            "content": "y" * MAX_BODY_BYTES})
        assert str(MAX_BODY_BYTES) in str(refused.value), repr(refused.value)
        client.run(scenario.check_tools)  # the session goes on

