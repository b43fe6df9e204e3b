"""The artifact scenario against ``memtrove serve --transport http``: one server subprocess for the module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import artifact_scenario as scenario
from tests.support.mcp_procs import BlockingClient, HttpServer, blocking, http_server, http_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("e2e-artifacts-http")
    with http_server(root / "data", scenario.OWNER_ENV, stderr_path=root / "stderr.log") as running:
        yield running


@pytest.fixture(scope="module")
def client(server: HttpServer) -> Iterator[BlockingClient]:
    with blocking(http_session(server.mcp_url)) as connected:
        yield connected


@pytest.fixture(scope="module")
def corpus(client: BlockingClient) -> scenario.Corpus:
    return client.run(scenario.seed)


@pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_artifact_scenario(client: BlockingClient, corpus: scenario.Corpus, check: Callable[..., Any]) -> None:
    client.run(check, corpus)


@pytest.mark.parametrize("case", scenario.BAD_INPUTS, ids=lambda case: case.id)
def test_bad_input_is_refused_and_changes_nothing(client: BlockingClient, corpus: scenario.Corpus,
                                                  case: scenario.BadInput) -> None:
    client.run(scenario.check_bad_input, corpus, case)


def test_a_second_session_sees_the_same_artifacts(server: HttpServer, client: BlockingClient,
                                                  corpus: scenario.Corpus) -> None:
    stored = client.run(scenario.ingest, artifact_type="note", source_system="manual",
                        content=f"Second-session note {corpus.run}: the staging bucket lives in eu-north-1.")
    with blocking(http_session(server.mcp_url)) as other:
        view = other.run(scenario.get, stored["artifact_id"], include_content=True)
        assert view["content"].startswith("Second-session note")
        found = other.run(scenario.artifact_search, "which region is the staging bucket in", limit=1)
        assert scenario.artifact_ids(found) == [stored["artifact_id"]]
        other.run(scenario.call_ok, "artifact_delete", {"artifact_id": stored["artifact_id"]})
    gone = client.run(lambda c: c.call_tool("artifact_get", {"artifact_id": stored["artifact_id"]}))
    assert gone.is_error
