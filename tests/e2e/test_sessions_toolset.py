"""Spec 001's tools (MEMTROVE_TOOLSETS=sessions) over stdio and over HTTP: one server per transport.

Each class runs the whole scenario against its own server and data directory, in definition order;
the cleanup test deletes every session memory and so comes last. Over stdio the export dir is the
default (``<data dir>/exports``), over HTTP it is set with MEMTROVE_EXPORT_DIR.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.e2e import sessions_scenario as scenario
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, stdio_session

pytestmark = pytest.mark.slow

TOOLSETS = {"MEMTROVE_TOOLSETS": "sessions"}


@contextmanager
def connected(transport: str, root: Path) -> Iterator[tuple[BlockingClient, scenario.World]]:
    """A client of a fresh server over ``transport``, and the world the scenario seeded into it."""
    data = root / "data"
    outside = root / "outside"
    outside.mkdir()
    if transport == "stdio":
        export = data / "exports"
        with blocking(stdio_session(data, TOOLSETS, stderr_path=root / "stderr.log")) as client:
            yield client, client.run(scenario.seed, data, export, outside)
    else:
        export = root / "exports"
        env = {**TOOLSETS, "MEMTROVE_EXPORT_DIR": str(export)}
        with http_server(data, env, stderr_path=root / "stderr.log") as server, \
                blocking(http_session(server.mcp_url)) as client:
            yield client, client.run(scenario.seed, data, export, outside)


class _SessionsSuite:
    transport: ClassVar[str]

    @pytest.fixture(scope="class")
    def session(self, request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BlockingClient, scenario.World]]:
        transport = request.cls.transport
        with connected(transport, tmp_path_factory.mktemp(f"e2e-sessions-{transport}")) as pair:
            yield pair

    @pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
    def test_scenario(self, session: tuple[BlockingClient, scenario.World], check: Callable[..., Any]) -> None:
        client, world = session
        client.run(check, world)

    @pytest.mark.parametrize("escape", scenario.ESCAPES, ids=lambda escape: escape.id)
    def test_write_document_outside_the_export_dir_is_refused(
            self, session: tuple[BlockingClient, scenario.World], escape: scenario.Escape) -> None:
        client, world = session
        client.run(scenario.check_export_escape, world, escape)

    @pytest.mark.parametrize("case", scenario.BAD_INPUTS, ids=lambda case: case.id)
    def test_bad_input_is_refused_and_changes_nothing(self, session: tuple[BlockingClient, scenario.World],
                                                      case: scenario.BadInput) -> None:
        client, world = session
        client.run(scenario.check_bad_input, world, case)

    def test_cleanup_deletes_session_memories(self, session: tuple[BlockingClient, scenario.World]) -> None:
        """Last: it deletes every session memory of this server."""
        client, world = session
        client.run(scenario.check_cleanup_deletes_session_memories, world)


class TestSessionsStdio(_SessionsSuite):
    transport = "stdio"


def test_content_of_500000_characters_is_accepted(tmp_path: Path) -> None:
    """On an OpenAI-compatible embedder (a local stand-in): the limit is the toolset's, not the model's,
    and half a million characters on the local model would take minutes to embed."""
    with QuickFakeOpenAIServer(default_dimensions=32) as fake:
        env = {**TOOLSETS, "MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": fake.base_url,
               "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32"}
        with blocking(stdio_session(tmp_path / "data", env, stderr_path=tmp_path / "stderr.log")) as client:
            client.run(scenario.check_content_limit_edge, None)


class TestSessionsHttp(_SessionsSuite):
    transport = "http"
