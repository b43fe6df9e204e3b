"""The code toolset over stdio with the official client, on the embedded default: requests' sdist from
PyPI indexed, searched by identifier in three spellings and by meaning, one file edited (only it read
again), one deleted (its chunks and symbols gone), bad paths refused naming the field, and cleared."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_procs import BlockingClient, blocking, stdio_session
from tests.support.sdists import python_files, unpacked

pytestmark = pytest.mark.slow


def call(client: BlockingClient, tool: str, **arguments: Any) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


def refused(client: BlockingClient, tool: str, **arguments: Any) -> str:
    result = client.call(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, Path, Path]]:
    roots = tmp_path_factory.mktemp("code-roots")
    repo = unpacked("requests", roots)
    outside = tmp_path_factory.mktemp("code-outside")
    env = {"MEMTROVE_TOOLSETS": "core,code", "MEMTROVE_CODE_ROOTS": str(roots), "MEMTROVE_CALL_BUDGET": "600"}
    with blocking(stdio_session(tmp_path_factory.mktemp("code") / "data", env)) as client:
        yield client, repo, outside


def test_index_search_edit_delete_clear(world) -> None:
    client, repo, _ = world
    src = ["src/**"]
    first = call(client, "index_codebase", path=str(repo), include=src)
    expected = [p for p in python_files(repo) if p.startswith("src/")]
    assert (first["status"], first["files"], first["indexed"], first["failed"]) == ("indexed", len(expected),
                                                                                    len(expected), 0)
    assert first["symbols"] > 200 and first["chunks"] >= len(expected)

    for spelling in ("merge_environment_settings", "mergeEnvironmentSettings", "merge environment settings"):
        top = call(client, "search_code", query=spelling, limit=5)["results"][0]
        assert (top["path"], top["symbol"], top["symbol_kind"]) == (
            "src/requests/sessions.py", "Session.merge_environment_settings", "method"), spelling
        assert top["start_line"] <= top["symbol_lines"][0] <= top["end_line"]
        assert "def merge_environment_settings" in top["snippet"]

    meaning = call(client, "search_code", query="strip the Authorization header when a redirect goes to another host",
                   limit=5)["results"]
    assert "SessionRedirectMixin.should_strip_auth" in [h.get("symbol") for h in meaning], meaning

    status = call(client, "get_indexing_status", path=str(repo))["codebases"][0]
    assert (status["status"], status["files"], status["include"]) == ("indexed", len(expected), src)

    edited = repo / "src/requests/help.py"
    edited.write_text(edited.read_text() + "\n\ndef memtrove_probe_marker():\n    return 'probe'\n")
    gone = repo / "src/requests/certs.py"
    gone_artifact = call(client, "search_code", query="where", path=str(gone))["results"][0]["artifact_id"]
    gone.unlink()
    second = call(client, "index_codebase", path=str(repo), include=src)
    assert (second["indexed"], second["removed"], second["unchanged"]) == (1, 1, len(expected) - 2)
    probe = call(client, "search_code", query="memtrove_probe_marker", limit=3)["results"][0]
    assert (probe["path"], probe["symbol"]) == ("src/requests/help.py", "memtrove_probe_marker")
    certs = call(client, "search_code", query="where", path=str(repo / "src/requests"), limit=50)["results"]
    assert "src/requests/certs.py" not in {h["path"] for h in certs}
    assert call(client, "search_code", query="where", path=str(gone))["results"] == []
    assert "not found" in refused(client, "artifact_get", artifact_id=gone_artifact).lower()

    cleared = call(client, "clear_index", path=str(repo))
    assert cleared["files_removed"] == len(expected) - 1
    assert "index_codebase" in refused(client, "search_code", query="merge_environment_settings")
    artifact = probe["artifact_id"]
    assert "not found" in refused(client, "artifact_get", artifact_id=artifact).lower()


def test_bad_paths_are_refused_naming_the_field(world) -> None:
    client, repo, outside = world
    (repo / "escape").symlink_to(outside)
    for path in ("src/requests", f"{repo}/../{repo.name}", str(repo / "setup.py"), str(outside),
                 str(repo / "escape"), str(repo / "no-such-folder")):
        said = refused(client, "index_codebase", path=path)
        assert "path" in said, said
    assert "languages" in refused(client, "index_codebase", path=str(repo), languages=["cobol"])
    assert "path" in refused(client, "get_indexing_status", path=str(outside))
    os.unlink(repo / "escape")


def test_the_clients_roots_allow_what_they_hold_and_nothing_else(tmp_path: Path) -> None:
    """With no MEMTROVE_CODE_ROOTS, a directory is indexed only under a root the client declares (asked
    over the session's back-channel: the pre-2026 handshake); a client declaring none is refused."""
    import asyncio

    from mcp.client import Client
    from mcp.types import ListRootsResult, Root

    from config.settings import Settings
    from domain.code.roots import OUTSIDE
    from entrypoints.mcp.server import build_server
    from entrypoints.runtime import Runtime
    from tests.e2e.scenario import call_ok

    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for folder in (mine, theirs):
        folder.mkdir()
        (folder / "tool.py").write_text(f"def {folder.name}_helper():\n    return 1\n")
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path / "data", memtrove_warmup=False,
                               memtrove_toolsets="core,code"))
    runtime.start()

    async def answer(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=f"file://{mine}", name="mine")])

    async def run() -> None:
        server = build_server(runtime)
        async with Client(server, list_roots_callback=answer, mode="legacy") as client:
            done = await call_ok(client, "index_codebase", {"path": str(mine)})
            assert (done["status"], done["indexed"]) == ("indexed", 1)
            found = await call_ok(client, "search_code", {"query": "mineHelper"})
            assert [h["symbol"] for h in found["results"]][:1] == ["mine_helper"]
            refused = await client.call_tool("index_codebase", {"path": str(theirs)})
            assert refused.is_error and OUTSIDE in refused.content[0].text
        async with Client(server, mode="legacy") as rootless:
            refused = await rootless.call_tool("index_codebase", {"path": str(mine)})
            assert refused.is_error and "no roots" in refused.content[0].text
    try:
        asyncio.run(run())
    finally:
        runtime.shutdown()


def test_a_long_index_reports_progress_answers_within_budget_and_completes(tmp_path: Path) -> None:
    """Over HTTP with a slow embedding API (a real local server): the call answers at its 1 s budget with
    where it got to, progress notifications counted files meanwhile, a second call joins the run, clear
    waits for it, and get_indexing_status follows it to the end."""
    import asyncio
    import time

    from tests.e2e.scenario import call_ok
    from tests.e2e.test_long_ingest import slow_env
    from tests.support.fake_openai import FakeOpenAIServer
    from tests.support.mcp_procs import http_server, http_session

    root = tmp_path / "roots" / "slow"
    root.mkdir(parents=True)
    for n in range(12):
        (root / f"step{n}.py").write_text(f"def step_{n}_handler(value):\n    return value + {n}\n")
    with FakeOpenAIServer(default_dimensions=32, slow_seconds=0.4) as fake:
        fake.script(*["slow"] * 14)
        env = slow_env(fake, MEMTROVE_TOOLSETS="core,code", MEMTROVE_CODE_ROOTS=str(tmp_path / "roots"))
        with http_server(tmp_path / "data", env) as server:
            async def scenario() -> None:
                async with http_session(server.mcp_url) as client:
                    progress: list[tuple[float, float | None, str | None]] = []

                    async def on_progress(done: float, total: float | None, message: str | None) -> None:
                        progress.append((done, total, message))

                    result = await client.call_tool("index_codebase", {"path": str(root)}, progress_callback=on_progress)
                    body = result.structured_content
                    assert not result.is_error and body["status"] == "indexing", body
                    assert body["files"] == 12 and 0 <= body["done"] < 12
                    assert progress and {t for _, t, _ in progress} == {12}
                    assert [d for d, _, _ in progress] == sorted(d for d, _, _ in progress)
                    assert progress[-1][2].endswith("of 12 files read")
                    joined = await call_ok(client, "index_codebase", {"path": str(root)})
                    assert joined["status"] == "indexing" and joined["codebase_id"] == body["codebase_id"]
                    busy = await client.call_tool("clear_index", {"path": str(root)})
                    assert busy.is_error and "being indexed" in busy.content[0].text
                    deadline = time.monotonic() + 120
                    while (status := (await call_ok(client, "get_indexing_status", {"path": str(root)}))
                           ["codebases"][0])["status"] == "indexing":
                        assert time.monotonic() < deadline, status
                        await asyncio.sleep(0.3)
                    assert (status["status"], status["indexed"]) == ("indexed", 12)
                    found = await call_ok(client, "search_code", {"query": "step7Handler", "limit": 1})
                    assert found["results"][0]["symbol"] == "step_7_handler"
            asyncio.run(scenario())
