"""Spec 002's tools (MEMTROVE_TOOLSETS=zapomni) over stdio and over HTTP: one server per transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.e2e import zapomni_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, stdio_session

pytestmark = pytest.mark.slow

TOOLSETS = {"MEMTROVE_TOOLSETS": "zapomni"}


@contextmanager
def connected(transport: str, root: Path) -> Iterator[tuple[BlockingClient, scenario.Notes]]:
    data = root / "data"
    if transport == "stdio":
        with blocking(stdio_session(data, TOOLSETS, stderr_path=root / "stderr.log")) as client:
            yield client, client.run(scenario.seed)
    else:
        with http_server(data, TOOLSETS, stderr_path=root / "stderr.log") as server, \
                blocking(http_session(server.mcp_url)) as client:
            yield client, client.run(scenario.seed)


class _ZapomniSuite:
    transport: ClassVar[str]

    @pytest.fixture(scope="class")
    def session(self, request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, scenario.Notes]]:
        transport = request.cls.transport
        with connected(transport, tmp_path_factory.mktemp(f"e2e-zapomni-{transport}")) as pair:
            yield pair

    @pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
    def test_scenario(self, session: tuple[BlockingClient, scenario.Notes], check: Callable[..., Any]) -> None:
        client, notes = session
        client.run(check, notes)

    @pytest.mark.parametrize("case", scenario.BAD_INPUTS, ids=lambda case: case.id)
    def test_bad_input_is_refused_and_changes_nothing(self, session: tuple[BlockingClient, scenario.Notes],
                                                      case: scenario.BadInput) -> None:
        client, notes = session
        client.run(scenario.check_bad_input, notes, case)


class TestZapomniStdio(_ZapomniSuite):
    transport = "stdio"


class TestZapomniHttp(_ZapomniSuite):
    transport = "http"
