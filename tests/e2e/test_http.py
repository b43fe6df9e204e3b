"""The shared scenario against ``memtrove serve --transport http``: one server subprocess for the module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import scenario
from tests.support.mcp_procs import BlockingClient, HttpServer, blocking, http_server, http_session

pytestmark = pytest.mark.slow

IN_PROCESS = {"MEMTROVE_SHARED": "false"}  # the server itself, not a bridge to a shared one


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("e2e-http")
    with http_server(root / "data", IN_PROCESS, stderr_path=root / "stderr.log") as running:
        yield running


@pytest.fixture(scope="module")
def client(server: HttpServer) -> Iterator[BlockingClient]:
    with blocking(http_session(server.mcp_url)) as connected:
        connected.run(scenario.seed)
        yield connected


@pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_scenario(client: BlockingClient, check: Callable[[Any], Any]) -> None:
    client.run(check)


@pytest.mark.parametrize("case", scenario.BAD_INPUTS, ids=lambda case: case.id)
def test_bad_input_is_refused_and_changes_nothing(client: BlockingClient, case: scenario.BadInput) -> None:
    client.run(scenario.check_bad_input, case)


@pytest.mark.parametrize("path", ["/mcp", "/mcp/"])
def test_a_second_session_sees_the_same_store(server: HttpServer, client: BlockingClient, path: str) -> None:
    stored = client.run(scenario.store, "The staging database lives in eu-west-1", "fact", 0.8)
    with blocking(http_session(server.base_url + path)) as other:
        found = other.run(scenario.search, "where is the staging database", limit=1)
        assert scenario.ids(found) == [stored["id"]]
        other.run(scenario.call_ok, "memory_delete", {"memory_id": stored["id"]})
    listed = client.run(scenario.list_memories, limit=100)
    assert stored["id"] not in scenario.ids(listed)
