"""The artifact scenario against ``memtrove serve`` over stdio: one server process for the module."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import artifact_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BlockingClient]:
    root = tmp_path_factory.mktemp("e2e-artifacts-stdio")
    with blocking(stdio_session(root / "data", scenario.OWNER_ENV, stderr_path=root / "stderr.log")) as connected:
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
