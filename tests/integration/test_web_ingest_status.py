"""The ingest result's progress line (/ui/ingest/status/<id>, which htmx asks for every second while an
artifact indexes), without a browser over the HTTP app in process: an artifact gone meanwhile ends the
line with what artifact_get said (no error page swapped into it, no more asking); an indexed one says it
is searchable and stops asking."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from config.settings import Settings
from domain.access.principal import local_principal
from entrypoints.http import build_http_app
from entrypoints.mcp.server import build_server
from entrypoints.runtime import Runtime
from entrypoints.web.caller import ToolCaller


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Runtime]]:
    runtime = Runtime(Settings(memtrove_data_dir=tmp_path_factory.mktemp("web-ingest") / "data",
                               memtrove_warmup=False))
    runtime.start()
    try:
        yield TestClient(build_http_app(build_server(runtime), runtime, "127.0.0.1"),
                         base_url="http://127.0.0.1:3000"), runtime
    finally:
        runtime.shutdown()


def test_a_gone_artifact_ends_the_progress_line_with_the_tools_message(app) -> None:
    client, _ = app
    client.get("/ui/search")  # a session first, as a browser has
    answer = client.get("/ui/ingest/status/art_" + "0" * 32)
    assert answer.status_code == 200
    assert "<html" not in answer.text and "hx-get" not in answer.text  # a line, that stops asking
    assert "Artifact art_" + "0" * 32 + " not found" in answer.text


def test_an_indexed_artifact_is_said_searchable(app) -> None:
    client, runtime = app
    owner = local_principal(runtime.settings.memtrove_local_clearance)
    made = asyncio.run(ToolCaller(runtime)(owner, "artifact_ingest", artifact_type="note", source_system="notes",
                                           content="A short note about the kettle."))
    answer = client.get(f"/ui/ingest/status/{made['artifact_id']}")
    assert "indexed: searchable now" in answer.text and "hx-get" not in answer.text
