"""A bridge answers initialize / server/discover / tools/list itself while the server it started loads,
with what a server of the same code and settings answered before (entrypoints/answers.py, early.py).

Real ``memtrove serve`` processes (MEMTROVE_SHARED=true) and the official mcp client, in both eras:
the answers recorded through one data dir's server are served on a fresh data dir before its server
listens, are what that server answers itself, and the session goes on through it. A recorded answer
that differs from the server's is dropped and the client is told to list again (then the server's
own answer is recorded).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import scenario
from tests.support.crash_driver import QuickFakeOpenAIServer
from entrypoints.shared import read_holder
from tests.support.mcp_procs import blocking, owner_pid, stdio_session, stop_owner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=32) as server:
        yield server


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    first, second = tmp_path / "first", tmp_path / "second"
    yield first, second, tmp_path / "cache"
    stop_owner(first)
    stop_owner(second)


def env_for(fake: QuickFakeOpenAIServer, cache: Path) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "60", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": "32",
            "XDG_CACHE_HOME": str(cache), "LOG_LEVEL": "DEBUG"}


def tools_of(client: Any) -> list[dict[str, Any]]:
    async def listed(session: Any) -> list[dict[str, Any]]:
        return [tool.model_dump(mode="json") for tool in (await session.list_tools()).tools]
    return client.run(listed)


def record_answers(data: Path, env: dict[str, str], mode: str, log: Path) -> tuple[list[dict[str, Any]], Path]:
    """A session on ``data`` (its server started by the bridge), then the server stopped: the tools it
    listed and the file its answers were recorded in."""
    with blocking(stdio_session(data, env, stderr_path=log, mode=mode)) as client:
        tools = tools_of(client)
        assert client.run(scenario.list_memories, limit=1)["count"] == 0
        key = read_holder(data.resolve())["answers"]
    stop_owner(data)
    recorded = Path(env["XDG_CACHE_HOME"]) / "memtrove" / "answers" / f"{key}.json"
    assert recorded.exists(), sorted(recorded.parent.glob("*"))
    return tools, recorded


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_fresh_data_dir_is_answered_early_with_what_its_server_answers(
        fake: QuickFakeOpenAIServer, dirs: tuple[Path, Path, Path], mode: str) -> None:
    first, second, cache = dirs
    env = env_for(fake, cache)
    tools, recorded = record_answers(first, env, mode, first.parent / "first.log")
    assert "bridge_answered_early" not in (first.parent / "first.log").read_text()  # nothing recorded yet

    log = second.parent / "second.log"
    with blocking(stdio_session(second, env, stderr_path=log, mode=mode)) as client:
        assert tools_of(client) == tools
        stored = client.run(scenario.store, "The early answers came from the first data dir's server")
        assert scenario.ids(client.run(scenario.list_memories, limit=5)) == [stored["id"]]
        assert owner_pid(second) is not None
    text = log.read_text()
    assert "bridge_answered_early method=tools/list" in text, text
    opening = "initialize" if mode == "legacy" else "server/discover"
    assert f"bridge_answered_early method={opening}" in text, text
    assert "bridge_early_answer_differed" not in text, text  # the second server answered the same
    assert recorded.exists()


def test_a_recorded_answer_the_server_contradicts_is_dropped_and_the_client_lists_again(
        fake: QuickFakeOpenAIServer, dirs: tuple[Path, Path, Path]) -> None:
    first, second, cache = dirs
    env = env_for(fake, cache)
    tools, recorded = record_answers(first, env, "legacy", first.parent / "first.log")
    entries = json.loads(recorded.read_text())
    for entry, result in entries.items():
        if json.loads(entry)[1] == "tools/list":
            result["tools"] = result["tools"][:-1]  # as if the code had changed under the same key
    recorded.write_text(json.dumps(entries))

    log = second.parent / "second.log"
    with blocking(stdio_session(second, env, stderr_path=log, mode="legacy")) as client:
        assert tools_of(client) == tools[:-1]  # served before the server listened
        client.run(scenario.list_memories, limit=1)  # through the server: its check has been answered
        assert tools_of(client) == tools
    text = log.read_text()
    assert "bridge_early_answer_differed method=tools/list" in text, text
    # Dropped, then recorded again from the server's own answer to the second listing.
    lists = [r for e, r in json.loads(recorded.read_text()).items() if json.loads(e)[1] == "tools/list"]
    assert [[t["name"] for t in r["tools"]] for r in lists] == [[t["name"] for t in tools]]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_unshared_server_answers_early_while_it_builds_and_serves_the_session_itself(
        fake: QuickFakeOpenAIServer, dirs: tuple[Path, Path, Path], mode: str) -> None:
    """MEMTROVE_SHARED=false (entrypoints/local.py): the first start records its own answers and the
    settings it started with (entrypoints/start.py); a restart answers from them, and its session is
    served by the process itself (no shared server starts)."""
    first, _, cache = dirs
    env = {**env_for(fake, cache), "MEMTROVE_SHARED": "false"}
    logs = [first.parent / "one.log", first.parent / "two.log"]
    listed = []
    for log in logs:
        with blocking(stdio_session(first, env, stderr_path=log, mode=mode)) as client:
            listed.append(tools_of(client))
            stored = client.run(scenario.store, f"Served in process, session {len(listed)}")
            assert stored["id"] in scenario.ids(client.run(scenario.list_memories, limit=5))
            assert owner_pid(first) is None
    assert listed[0] == listed[1]
    assert "bridge_answered_early" not in logs[0].read_text()
    text = logs[1].read_text()
    assert "bridge_answered_early method=tools/list" in text, text
    assert "bridge_early_answer_differed" not in text, text
    assert list((cache / "memtrove").glob("start-*.json"))
