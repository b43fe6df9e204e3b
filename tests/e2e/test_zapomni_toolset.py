"""Spec 002's tools (MEMTROVE_TOOLSETS=zapomni) over stdio and over HTTP: one server per transport; and with
core's tools beside them (core,zapomni), core's artifact_delete on a Zapomni memory."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.e2e import zapomni_scenario as scenario
from tests.support.mcp_procs import BlockingClient, blocking, http_server, http_session, stdio_session

pytestmark = pytest.mark.slow

TOOLSETS = {"MEMTROVE_TOOLSETS": "zapomni"}
Session = tuple[BlockingClient, scenario.Notes, Path]  # the client, what seed added, the server's data dir


@contextmanager
def connected(transport: str, root: Path, toolsets: dict[str, str] = TOOLSETS) -> Iterator[Session]:
    data = root / "data"
    if transport == "stdio":
        with blocking(stdio_session(data, toolsets, stderr_path=root / "stderr.log")) as client:
            yield client, client.run(scenario.seed), data
    else:
        with http_server(data, toolsets, stderr_path=root / "stderr.log") as server, \
                blocking(http_session(server.mcp_url)) as client:
            yield client, client.run(scenario.seed), data


def bytes_on_disk(data: Path) -> int:
    """The SQLite store's files and the embedded Chroma's directory (settings.chroma_path)."""
    total = 0
    for f in [*data.glob("memtrove.sqlite3*"), *(data / "chroma").rglob("*")]:
        with contextlib.suppress(OSError):  # a file the server removes while we count
            total += f.stat().st_size if f.is_file() else 0
    return total


class _ZapomniSuite:
    transport: ClassVar[str]

    @pytest.fixture(scope="class")
    def session(self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
        transport = request.cls.transport
        with connected(transport, tmp_path_factory.mktemp(f"e2e-zapomni-{transport}")) as pair:
            yield pair

    @pytest.mark.parametrize("check", scenario.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
    def test_scenario(self, session: Session, check: Callable[..., Any]) -> None:
        client, notes, _ = session
        client.run(check, notes)

    @pytest.mark.parametrize("case", scenario.BAD_INPUTS, ids=lambda case: case.id)
    def test_bad_input_is_refused_and_changes_nothing(self, session: Session, case: scenario.BadInput) -> None:
        client, notes, _ = session
        client.run(scenario.check_bad_input, notes, case)

    def test_database_size_is_the_store_on_disk(self, session: Session) -> None:
        """SQLite's files and the embedded Chroma's directory, measured while nothing writes (the vector
        worker may still be indexing: a measurement taken between two equal ones is kept)."""
        client, _, data = session
        for _ in range(20):
            before = bytes_on_disk(data)
            reported = client.run(scenario.statistics)["database_size_mb"]
            if bytes_on_disk(data) == before:
                break
            time.sleep(0.5)
        else:
            pytest.fail("the store's files kept changing for 10 s: no quiet moment to compare sizes")
        chroma = bytes_on_disk(data) - sum(f.stat().st_size for f in data.glob("memtrove.sqlite3*"))
        assert chroma > 100_000, f"the embedded Chroma holds {chroma} bytes: too little to tell it is counted"
        assert abs(reported - before / 1_048_576) <= 0.001, (reported, before / 1_048_576, chroma)


class TestZapomniStdio(_ZapomniSuite):
    transport = "stdio"


class TestZapomniHttp(_ZapomniSuite):
    transport = "http"


def test_core_artifact_delete_removes_a_zapomni_memory(tmp_path: Path) -> None:
    with connected("stdio", tmp_path, {"MEMTROVE_TOOLSETS": "core,zapomni"}) as (client, notes, _):
        client.run(scenario.check_core_delete_removes_a_memory, notes)
