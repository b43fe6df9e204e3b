"""Durability across processes, and start-up refusals: a mismatched embedding profile, a bad setting."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import scenario
from tests.support.mcp_procs import blocking, http_session, run_cli, start_http_server, stdio_session

pytestmark = pytest.mark.slow

CONVERSATION = "e2e-restart-conversation"
MEMORIES = [
    ("User prefers dark mode in every editor", "preference", 0.9),
    ("The user's dog is named Biscuit", "fact", 0.8),
    ("Working on the billing service migration to PostgreSQL", "project", 0.7),
    ("Decided to deploy on Fridays only after the code freeze", "decision", 0.6),
]
TURNS = [("user", "How do I implement auth?"), ("assistant", "Use OAuth with PKCE."),
         ("user", "What about JWT tokens?")]


@dataclass
class Before:
    data_dir: Path
    root: Path
    listed: list[tuple[Any, ...]]
    deleted: str
    turns: list[tuple[Any, ...]]
    vectors: dict[str, int]


async def fill(client: Any) -> dict[str, Any]:
    stored = [await scenario.store(client, content, kind, confidence) for content, kind, confidence in MEMORIES]
    doomed = await scenario.store(client, "The user's cat is called Mochi", "fact", 0.5)
    await scenario.call_ok(client, "memory_delete", {"memory_id": doomed["id"]})
    for index, (role, content) in enumerate(TURNS):
        await scenario.call_ok(client, "history_append", {"conversation_id": CONVERSATION, "role": role,
                                                           "content": content, "turn_index": index,
                                                           "ts": f"2025-12-25T10:3{index}:00Z"})
    listed = await scenario.list_memories(client, limit=100)
    history = await scenario.call_ok(client, "history_get", {"conversation_id": CONVERSATION})
    assert len(listed["results"]) == len(stored)
    return {"listed": listed, "history": history, "deleted": doomed["id"],
            "vectors": await scenario.stored_vectors(client)}


def memory_rows(listed: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(h["id"], h["content"], h["memory_type"], h["confidence"], h["ts"]) for h in listed["results"]]


def turn_rows(history: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(t["id"], t["role"], t["content"], t["turn_index"], t["ts"]) for t in history["turns"]]


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Before:
    root = tmp_path_factory.mktemp("e2e-restart")
    data_dir = root / "data"
    with blocking(stdio_session(data_dir, stderr_path=root / "first.log")) as client:
        state = client.run(fill)
    return Before(data_dir, root, memory_rows(state["listed"]), state["deleted"], turn_rows(state["history"]),
                  state["vectors"])


def single_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected a one-line error, got:\n{stderr}"
    return lines[0]


def test_another_embedding_profile_on_the_same_data_dir_refuses_to_start(before: Before) -> None:
    done = run_cli(["serve"], before.data_dir, {"MEMTROVE_EMBEDDER": "openai", "OPENAI_API_KEY": "x"})
    assert done.returncode != 0, done
    assert done.stdout == ""
    line = single_line(done.stderr)
    assert "embedding profile" in line
    assert "local/all-MiniLM-L6-v2/384d" in line, line
    assert "openai/" in line, line
    assert "MEMTROVE_EMBEDDER" in line and "MEMTROVE_DATA_DIR" in line


def test_memories_and_history_survive_a_restart(before: Before) -> None:
    # Runs after the refused start above: that must have left the store as it was.
    with blocking(stdio_session(before.data_dir, stderr_path=before.root / "second.log")) as client:
        listed = client.run(scenario.list_memories, limit=100)
        assert memory_rows(listed) == before.listed
        assert before.deleted not in scenario.ids(listed)
        found = client.run(scenario.search, "what colour theme does the user like", limit=5)
        assert found["results"][0]["content"] == "User prefers dark mode in every editor"
        assert before.deleted not in scenario.ids(found)
        history = client.run(scenario.call_ok, "history_get", {"conversation_id": CONVERSATION})
        assert turn_rows(history) == before.turns
        assert client.run(scenario.stored_vectors) == before.vectors
        again = client.run(scenario.call_ok, "history_append", {
            "conversation_id": CONVERSATION, "role": "user", "content": TURNS[0][1], "turn_index": 0})
        assert again["status"] == "unchanged"
        newer = client.run(scenario.store, "The user's favourite editor is Helix", "preference", 0.8)
        assert client.run(scenario.list_memories, limit=1)["results"][0]["id"] == newer["id"]


def test_http_server_stopped_by_sigterm_keeps_what_it_stored(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    server = start_http_server(data_dir, stderr_path=tmp_path / "http.log")
    try:
        with blocking(http_session(server.mcp_url)) as client:
            stored = [client.run(scenario.store, content, kind, confidence)["id"]
                      for content, kind, confidence in MEMORIES[:2]]
            client.run(scenario.call_ok, "history_append", {"conversation_id": CONVERSATION, "role": "user",
                                                             "content": TURNS[0][1], "turn_index": 0})
    finally:
        returncode = server.stop()
    # uvicorn re-raises the SIGTERM it handled, so -15 is a graceful stop too; -9 means it had to be killed.
    assert returncode in (0, -15), f"exit {returncode}; stderr:\n{server.stderr()}"
    assert "Traceback" not in server.stderr(), server.stderr()
    with blocking(stdio_session(data_dir, stderr_path=tmp_path / "stdio.log")) as client:
        assert scenario.ids(client.run(scenario.list_memories, limit=100)) == stored[::-1]
        found = client.run(scenario.search, "what colour theme does the user like", limit=1)
        assert scenario.ids(found) == [stored[0]]
        history = client.run(scenario.call_ok, "history_get", {"conversation_id": CONVERSATION})
        assert [t["content"] for t in history["turns"]] == [TURNS[0][1]]
        assert client.run(scenario.stored_vectors) == {"memory": 2, "history": 1}


@pytest.mark.parametrize("variable, value", [("MCP_PORT", "abc"), ("MCP_PORT", "70000"),
                                             ("MEMTROVE_EMBEDDER", "magic"), ("LOG_LEVEL", "chatty")])
def test_invalid_setting_exits_with_one_line_naming_it(tmp_path: Path, variable: str, value: str) -> None:
    done = run_cli(["serve"], tmp_path / "data", {variable: value}, timeout=30.0)
    assert done.returncode != 0, done
    assert done.stdout == ""
    line = single_line(done.stderr)
    assert variable in line and value.lower() in line.lower(), line
