"""Issue 41 over MCP, with real server processes: an HTTP client whose roots callback answers
``file:///`` indexes nothing outside MEMTROVE_CODE_ROOTS, and every path outside gets one message
(``/etc/shadow``, a missing path, ``/proc/self/cwd``, a symlink escaping the root); without server
roots, HTTP indexes no code at all; a FIFO in a codebase or in a folder ``memtrove ingest`` reads is
skipped and the run ends; a run whose server was killed is taken over at once by the next server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.code.roots import NO_HTTP_ROOTS, OUTSIDE
from tests.e2e.scenario import call_ok
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import http_server, http_session, run_cli, stdio_session, stop_owner

pytestmark = pytest.mark.slow

DIMS = 32
REPO = Path(__file__).resolve().parents[2]
TOKEN = "confinement-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


def embedder_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake",
            "OPENAI_EMBED_DIMS": str(DIMS), "MEMTROVE_TOOLSETS": "core,code", **extra}


async def everything(_context: Any) -> Any:
    """A client's roots callback claiming the whole disk."""
    from mcp.types import ListRootsResult, Root

    return ListRootsResult(roots=[Root(uri="file:///", name="everything")])


async def refusal(client: Any, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


def test_over_http_a_client_claiming_every_root_reads_nothing_outside_the_servers(
        tmp_path: Path, fake: QuickFakeOpenAIServer) -> None:
    roots, secret = tmp_path / "roots", tmp_path / "secret"
    (roots / "app").mkdir(parents=True)
    (roots / "app" / "main.py").write_text("def serve_requests():\n    return 1\n")
    secret.mkdir()
    (secret / "settings.py").write_text("DB_PASSWORD = 'hunter2-do-not-read'\n")
    (roots / "escape").symlink_to(secret)
    probes = ["/etc/shadow", "/nonexistent/x", "/proc/self/cwd", str(roots / "escape"), str(secret),
              str(secret / "settings.py"), str(REPO), "/"]
    env = embedder_env(fake, MEMTROVE_CODE_ROOTS=str(roots))
    with http_server(tmp_path / "data", env, token=TOKEN) as server:
        async def scenario() -> None:
            async with http_session(server.mcp_url, TOKEN, list_roots_callback=everything, mode="legacy") as client:
                said = {p: await refusal(client, "index_codebase", {"path": p}) for p in probes}
                assert set(said.values()) == {OUTSIDE}, said
                nothing = await refusal(client, "search_code", {"query": "DB_PASSWORD"})
                assert "hunter2" not in nothing and "index_codebase" in nothing
                done = await call_ok(client, "index_codebase", {"path": str(roots / "app")})
                assert (done["status"], done["indexed"]) == ("indexed", 1)
                found = await call_ok(client, "search_code", {"query": "DB_PASSWORD", "limit": 50})
                assert all("hunter2" not in hit["snippet"] for hit in found["results"]), found
                # The other code tools say nothing of where a path leads either.
                for tool in ("get_indexing_status", "clear_index"):
                    told = await refusal(client, tool, {"path": "/proc/self/cwd"})
                    assert os.getcwd() not in told and str(REPO) not in told, told
                told = await refusal(client, "search_code", {"query": "x", "path": "/proc/self/cwd"})
                assert os.getcwd() not in told and str(REPO) not in told, told
        asyncio.run(scenario())


def test_over_http_without_server_roots_no_code_is_indexed(tmp_path: Path, fake: QuickFakeOpenAIServer) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "tool.py").write_text("def helper():\n    return 1\n")
    with http_server(tmp_path / "data", embedder_env(fake)) as server:  # loopback, no token: the local owner
        async def scenario() -> None:
            async with http_session(server.mcp_url, list_roots_callback=everything, mode="legacy") as client:
                for path in (str(folder), "/etc/shadow", "/nonexistent/x"):
                    assert await refusal(client, "index_codebase", {"path": path}) == NO_HTTP_ROOTS
        asyncio.run(scenario())


def test_a_local_clients_roots_narrow_the_servers(tmp_path: Path) -> None:
    """In process (as over stdio: the local owner's client): server roots set, the client's declared
    roots narrow them; one outside them (``/etc``) adds nothing."""
    from mcp.client import Client
    from mcp.types import ListRootsResult, Root

    from config.settings import Settings
    from entrypoints.mcp.server import build_server
    from entrypoints.runtime import Runtime

    roots = tmp_path / "roots"
    for name in ("mine", "theirs"):
        (roots / name).mkdir(parents=True)
        (roots / name / "tool.py").write_text(f"def {name}_helper():\n    return 1\n")
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path / "data", memtrove_warmup=False,
                               memtrove_toolsets="core,code", memtrove_code_roots=str(roots)))
    runtime.start()

    async def answer(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{roots / 'mine'}"), Root(uri="file:///etc")])

    async def run() -> None:
        async with Client(build_server(runtime), list_roots_callback=answer, mode="legacy") as client:
            done = await call_ok(client, "index_codebase", {"path": str(roots / "mine")})
            assert (done["status"], done["indexed"]) == ("indexed", 1)
            for path in (str(roots / "theirs"), str(roots), "/etc", "/etc/passwd"):
                assert await refusal(client, "index_codebase", {"path": path}) == OUTSIDE, path
    try:
        asyncio.run(run())
    finally:
        runtime.shutdown()


def test_a_fifo_in_a_codebase_is_skipped_and_the_index_completes(tmp_path: Path,
                                                                 fake: QuickFakeOpenAIServer) -> None:
    roots = tmp_path / "roots"
    (roots / "src").mkdir(parents=True)
    (roots / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (roots / "src" / "b.py").write_text("def beta():\n    return 2\n")
    os.mkfifo(roots / "src" / "x.py")
    env = embedder_env(fake, MEMTROVE_CODE_ROOTS=str(roots), MEMTROVE_CALL_BUDGET="60")

    async def scenario() -> None:
        async with stdio_session(tmp_path / "data", env) as client:
            done = await call_ok(client, "index_codebase", {"path": str(roots)})
            assert (done["status"], done["files"], done["indexed"], done["skipped"]) == ("indexed", 3, 2, 1), done
            assert done["skipped_files"] == [{"path": "src/x.py",
                                              "reason": "a FIFO (named pipe), not a regular file: not opened"}]
            again = await call_ok(client, "index_codebase", {"path": str(roots)})
            assert (again["status"], again["unchanged"], again["skipped"]) == ("indexed", 2, 1), again
    asyncio.run(scenario())


def test_memtrove_ingest_of_a_folder_with_a_fifo_completes(tmp_path: Path, fake: QuickFakeOpenAIServer) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ferry.md").write_text("The ferry leaves at nine from pier four.\n")
    os.mkfifo(folder / "pipe.md")
    data = tmp_path / "data"
    env = embedder_env(fake, MEMTROVE_SHARED="true", MEMTROVE_IDLE_TIMEOUT="60", MEMTROVE_TOOLSETS="core")
    try:
        done = run_cli(["ingest", str(folder), "--json"], data, env, timeout=180)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert (summary["files"], summary["ingested"]) == (2, 1), summary
        assert summary["skipped"] == [{"path": (folder / "pipe.md").resolve().as_posix(),
                                       "reason": "a FIFO (named pipe), not a regular file: not opened"}]
        named = run_cli(["ingest", str(folder / "pipe.md"), "--json"], data, env, timeout=180)
        assert named.returncode == 0 and json.loads(named.stdout)["skipped"][0]["path"].endswith("pipe.md")
    finally:
        stop_owner(data)


def test_a_run_whose_server_was_killed_is_taken_over_at_once(tmp_path: Path) -> None:
    roots = tmp_path / "roots"
    root = roots / "slow"
    root.mkdir(parents=True)
    for n in range(12):
        (root / f"step{n}.py").write_text(f"def step_{n}_handler(value):\n    return value + {n}\n")
    with FakeOpenAIServer(default_dimensions=DIMS, slow_seconds=1.0) as slow:
        slow.script(*["slow"] * 6)  # the first run is still reading files when its server is killed
        env = embedder_env(slow, MEMTROVE_CODE_ROOTS=str(roots), MEMTROVE_CALL_BUDGET="1", MEMTROVE_SHARED="false")
        with http_server(tmp_path / "data", env) as first:
            async def start() -> str:
                async with http_session(first.mcp_url) as client:
                    body = await call_ok(client, "index_codebase", {"path": str(root)})
                    assert body["status"] == "indexing", body
                    return body["codebase_id"]
            killed_run = asyncio.run(start())
            first.process.kill()  # kill -9: no cleanup, the run's row still says indexing
            first.process.wait()
        with http_server(tmp_path / "data", env) as second:
            async def take_over() -> None:
                async with http_session(second.mcp_url) as client:
                    status = (await call_ok(client, "get_indexing_status", {"path": str(root)}))["codebases"][0]
                    assert (status["codebase_id"], status["status"]) == (killed_run, "interrupted"), status
                    result = await client.call_tool("index_codebase", {"path": str(root)})
                    said = result.content[0].text
                    assert not result.is_error and not said.startswith("Already being indexed"), said
                    deadline = time.monotonic() + 120
                    while (status := (await call_ok(client, "get_indexing_status", {"path": str(root)}))
                           ["codebases"][0])["status"] == "indexing":
                        assert time.monotonic() < deadline, status
                        await asyncio.sleep(0.3)
                    assert (status["status"], status["indexed"] + status["unchanged"]) == ("indexed", 12), status
            asyncio.run(take_over())
