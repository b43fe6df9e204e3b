"""The artifact scenario (ingest, search in every mode, filters, delete) with PostgreSQL as the store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import artifact_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[BlockingClient]:
    root = tmp_path_factory.mktemp("e2e-postgres")
    env = {"MEMTROVE_DATABASE_URL": fresh_database(postgres_url)}
    with blocking(stdio_session(root / "data", env=env, stderr_path=root / "stderr.log")) as connected:
        yield connected


@pytest.fixture(scope="module")
def corpus(client: BlockingClient) -> scenario.Corpus:
    return client.run(scenario.seed)


@pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_artifact_scenario_on_postgres(client: BlockingClient, corpus: scenario.Corpus,
                                       check: Callable[..., Any]) -> None:
    client.run(check, corpus)
