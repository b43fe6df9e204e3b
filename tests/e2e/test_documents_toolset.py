"""The documents toolset (spec 004) over stdio and HTTP, and project isolation by the client's roots."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import documents_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, stdio_session

pytestmark = pytest.mark.slow
ENV = {"MEMTROVE_TOOLSETS": "core,documents"}


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    root = tmp_path_factory.mktemp(f"documents-{request.param}")
    if request.param == "stdio":
        with blocking(stdio_session(root / "data", ENV)) as connected:
            yield connected
    else:
        with http_server(root / "data", ENV) as server, blocking(http_session(server.mcp_url)) as connected:
            yield connected


@pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
def test_documents_scenario(client: BlockingClient, check: Callable[[Any], Any]) -> None:
    client.run(check)


def test_projects_from_roots_never_mix(tmp_path: Path) -> None:
    """Two clients declaring different roots see only their own project's items. (Roots are asked over
    the session's back-channel: the pre-2026 handshake; a 2026-07-28 client without one gets the
    configured default project.)"""
    from mcp.client import Client
    from mcp.types import ListRootsResult, Root

    from config.settings import Settings
    from entrypoints.mcp.server import build_server
    from entrypoints.runtime import Runtime

    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path / "data", memtrove_warmup=False,
                               memtrove_toolsets="core,documents"))
    runtime.start()

    def roots_of(name: str) -> Any:
        async def answer(_context: Any) -> ListRootsResult:
            return ListRootsResult(roots=[Root(uri=f"file://{tmp_path / name}", name=name)])
        return answer

    async def run() -> None:
        server = build_server(runtime)
        async with Client(server, list_roots_callback=roots_of("alpha"), mode="legacy") as alpha:
            await scenario.call_ok(alpha, "memory_commit", {"idempotencyKey": "a-1", "entries": [
                {"kind": "note", "title": "Alpha secret", "content": "The alpha launch code is tangerine."}]})
            assert (await scenario.call_ok(alpha, "project_search", {"query": "launch code tangerine"}))["count"] == 1
        async with Client(server, list_roots_callback=roots_of("beta"), mode="legacy") as beta:
            found = await scenario.call_ok(beta, "project_search", {"query": "launch code tangerine"})
            assert found["count"] == 0
            assert (await beta.list_resources()).resources == []
            assert (await scenario.call_ok(beta, "memory_restore", {"goal": "launch code"}))["entries"] == []
    try:
        asyncio.run(run())
    finally:
        runtime.shutdown()


def test_a_handshake_client_is_told_that_the_resource_list_changes(tmp_path: Path) -> None:
    """2025-era clients (``initialize``) read listChanged from the handshake; the server sends it, so says so."""
    async def run() -> None:
        async with stdio_session(tmp_path / "data", ENV, mode="legacy") as client:
            resources = client.server_capabilities.resources
            assert resources is not None and resources.list_changed is True, resources
        async with stdio_session(tmp_path / "data", {"MEMTROVE_TOOLSETS": "core"}, mode="legacy") as client:
            resources = client.server_capabilities.resources  # an empty list that never changes
            assert resources is None or not resources.list_changed, resources

    asyncio.run(run())
