"""One server per data dir: stdio clients share it through bridges (real processes, the official mcp client).

Each client starts its own ``memtrove serve`` (MEMTROVE_SHARED=true), as Claude Desktop and Claude
Code do; the first bridge starts the owner, which every bridge then talks to over the data dir's socket.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from entrypoints.shared import read_holder, socket_path
from tests.e2e import artifact_scenario, scenario
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import (blocking, free_port, memtrove_command, owner_pid, run_cli, server_env,
                                     start_http_server, stdio_session, stop_owner, wait_until_unowned)

pytestmark = pytest.mark.slow

DIMS = 32
GONE_TIMEOUT = 30.0  # seconds a killed or idle owner may take to let go of the data dir

DESKTOP = ["Claude Desktop notes: the user's quokka is named Pemberton",
           "Claude Desktop notes: invoices go out on the ninth of each month"]
CODE = ["Claude Code notes: the repository builds with zigbuild on Thursdays",
        "Claude Code notes: the staging database is called marmalade-7"]
HANDBOOK = ("# Onboarding handbook\n\nEvery new engineer pairs with a buddy for the first fortnight. "
            "The buddy explains the flamingo deployment pipeline and the weekly retro.\n")


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS, slow_seconds=120.0) as server:
        yield server


def shared_env(fake: QuickFakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
            "OPENAI_MAX_RETRIES": "1", **extra}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    yield data
    stop_owner(data)  # owners are detached: never leave one running past its test


def client(data: Path, env: dict[str, str], name: str, mode: str = "auto") -> Any:
    return blocking(stdio_session(data, env, stderr_path=data.parent / f"{name}-stderr.log", mode=mode))


def found_in(client: Any, query: str, mode: str) -> list[str]:
    return scenario.ids(client.run(scenario.search, query, mode=mode, limit=5))


def test_two_clients_see_each_others_writes_in_every_mode(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    env = shared_env(fake)
    with client(data_dir, env, "desktop") as desktop, client(data_dir, env, "code") as code:
        from_desktop = [desktop.run(scenario.store, text, "fact", 0.9)["id"] for text in DESKTOP]
        from_code = [code.run(scenario.store, text, "fact", 0.9)["id"] for text in CODE]
        for reader, texts, ids in ((code, DESKTOP, from_desktop), (desktop, CODE, from_code)):
            for text, memory_id in zip(texts, ids, strict=True):
                for mode in ("vector", "lexical", "hybrid"):
                    assert memory_id in found_in(reader, text, mode), (mode, text)
        ingested = desktop.run(artifact_scenario.ingest, artifact_type="doc", source_system="handbooks",
                               source_id="onboarding", title="onboarding.md", content=HANDBOOK)
        hits = code.run(artifact_scenario.hybrid, "flamingo deployment pipeline buddy", limit=5)
        assert ingested["artifact_id"] in artifact_scenario.artifact_ids(hits), hits
        listed = code.run(scenario.list_memories, limit=100)
        assert set(scenario.ids(listed)) == set(from_desktop + from_code)
    holder = read_holder(data_dir.resolve())
    assert holder["kind"] == "stdio" and holder["pid"] == owner_pid(data_dir)


# "legacy": the initialize handshake (2025-era clients; the bridge replays it to the new owner);
# "auto": 2026-era requests, each carrying its own protocol envelope.
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_owner_killed_between_calls_is_restarted_by_the_next_call(fake: QuickFakeOpenAIServer, data_dir: Path,
                                                                   mode: str) -> None:
    with client(data_dir, shared_env(fake), "desktop", mode) as desktop:
        stored = {text: desktop.run(scenario.store, text, "fact", 0.9)["id"] for text in DESKTOP + CODE}
        first = owner_pid(data_dir)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_until_unowned(data_dir, GONE_TIMEOUT)
        # The same client session goes on: its bridge starts a new owner and replays the handshake.
        for text, memory_id in stored.items():
            assert found_in(desktop, text, "vector")[0] == memory_id, text
            assert found_in(desktop, text, "lexical")[0] == memory_id, text
        assert owner_pid(data_dir) not in (None, first)
        later = desktop.run(scenario.store, "Stored after the restart: the kettle is blue", "fact", 0.8)["id"]
        assert set(scenario.ids(desktop.run(scenario.list_memories, limit=100))) == {*stored.values(), later}


def test_call_in_flight_when_the_owner_dies_fails_and_the_next_one_works(fake: QuickFakeOpenAIServer,
                                                                         data_dir: Path) -> None:
    with client(data_dir, shared_env(fake), "desktop", "legacy") as desktop:
        kept = desktop.run(scenario.store, DESKTOP[0], "fact", 0.9)["id"]
        owner = owner_pid(data_dir)
        assert owner is not None
        before = len(fake.embedding_requests)
        fake.script("slow")  # the next embedding hangs: the store below is in flight when the owner dies

        async def store_then_error(session: Any) -> str:
            try:
                await session.call_tool("memory_store", {"content": DESKTOP[1], "type": "fact", "confidence": 0.9})
            except Exception as exc:  # the bridge's JSON-RPC error reaches the client as an MCPError
                return str(exc)
            return "answered"

        pending = desktop.portal.start_task_soon(store_then_error, desktop.client)
        deadline = time.monotonic() + GONE_TIMEOUT
        while len(fake.embedding_requests) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(owner, signal.SIGKILL)
        assert "memtrove server restarted; retry" in pending.result(timeout=GONE_TIMEOUT)
        assert wait_until_unowned(data_dir, GONE_TIMEOUT)
        assert found_in(desktop, DESKTOP[0], "lexical") == [kept]  # nothing acknowledged was lost
        assert desktop.run(scenario.store, DESKTOP[1], "fact", 0.9)["id"]


def test_stale_socket_without_owner_is_replaced(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    data_dir.mkdir()
    path = socket_path(data_dir.resolve())
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # a socket file nobody listens on: what a kill -9 leaves behind
    stale.close()
    assert stat.S_ISSOCK(path.stat().st_mode) and owner_pid(data_dir) is None
    with client(data_dir, shared_env(fake), "desktop") as desktop:
        assert desktop.run(scenario.list_memories, limit=5)["count"] == 0
        assert owner_pid(data_dir) is not None


def test_socket_is_private_to_the_user(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    with client(data_dir, shared_env(fake), "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
        path = Path(read_holder(data_dir.resolve())["socket"])
        assert path == socket_path(data_dir.resolve()) == data_dir.resolve() / "memtrove.sock"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_data_dir_too_deep_for_a_socket_path_uses_a_short_one(fake: QuickFakeOpenAIServer, tmp_path: Path) -> None:
    data = tmp_path / ("deep-" * 12) / ("er-" * 12) / "data"
    data.parent.mkdir(parents=True)
    runtime_dir = Path(tempfile.mkdtemp(prefix="rt-"))  # short, wherever pytest's tmp_path is
    env = shared_env(fake, XDG_RUNTIME_DIR=str(runtime_dir))
    try:
        with client(data, env, "desktop") as desktop:
            assert desktop.run(scenario.list_memories, limit=1)["count"] == 0
            path = Path(read_holder(data.resolve())["socket"])
            assert path.parent == runtime_dir / "memtrove" and path.suffix == ".sock", path
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        stop_owner(data)
        shutil.rmtree(runtime_dir, ignore_errors=True)


def test_http_server_refuses_a_data_dir_a_shared_server_owns(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    env = shared_env(fake)
    with client(data_dir, env, "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
        pid = owner_pid(data_dir)
        done = run_cli(["serve", "--transport", "http", "--port", str(free_port())], data_dir, env, timeout=60.0)
        assert done.returncode == 2, done
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"pid {pid}" in lines[0] and str(data_dir.resolve() / "memtrove.sock") in lines[0], lines[0]
        assert "1 client connected" in lines[0] and "`memtrove stop --force`" in lines[0], lines[0]
        assert owner_pid(data_dir) == pid  # the running server is untouched
        assert desktop.run(scenario.list_memories, limit=1)["count"] == 0


def test_bridge_refuses_a_data_dir_an_http_server_owns(fake: QuickFakeOpenAIServer, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = shared_env(fake)
    server = start_http_server(data, env, stderr_path=tmp_path / "http-stderr.log")
    try:
        done = run_cli(["serve"], data, env, timeout=60.0)
        assert done.returncode == 2, done
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"pid {server.process.pid}" in lines[0] and "HTTP" in lines[0] and server.mcp_url in lines[0], lines[0]
    finally:
        assert server.stop() in (0, -15), server.stderr()


def test_owner_exits_when_idle(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    with client(data_dir, shared_env(fake, MEMTROVE_IDLE_TIMEOUT="2"), "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
        pid = owner_pid(data_dir)
        assert pid is not None
        time.sleep(3)  # connected clients keep it alive past the idle timeout
        assert owner_pid(data_dir) == pid
    assert wait_until_unowned(data_dir, GONE_TIMEOUT), "the owner did not exit after its last client left"
    assert not (data_dir / "memtrove.sock").exists()
    assert "owner_idle_exit" in (data_dir / "server.log").read_text(encoding="utf-8")


def test_owner_stops_cleanly_on_sigterm(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    with client(data_dir, shared_env(fake), "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
    pid = owner_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    assert wait_until_unowned(data_dir, GONE_TIMEOUT)
    log = (data_dir / "server.log").read_text(encoding="utf-8")
    assert "owner_signal signal=SIGTERM" in log and "owner_stopped" in log and "Traceback" not in log, log


def test_a_second_owner_refuses_with_the_running_ones_pid(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    env = shared_env(fake)
    with client(data_dir, env, "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
        pid = owner_pid(data_dir)
        done = run_cli(["serve", "--owner"], data_dir, env, timeout=60.0)
        assert done.returncode == 3, done
        assert [f"pid {pid}" in line for line in done.stderr.strip().splitlines()] == [True], done.stderr


def test_clients_started_together_share_one_owner(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    env = shared_env(fake)

    async def together() -> list[int]:
        counts: list[int] = []

        async def one(name: str) -> None:
            async with stdio_session(data_dir, env, stderr_path=data_dir.parent / f"{name}.log") as session:
                await scenario.store(session, f"Stored by {name}: racing starts are fine", "fact", 0.5)
                counts.append(1)

        async with anyio.create_task_group() as tasks:
            for name in ("desktop", "code", "cli"):
                tasks.start_soon(one, name)
        return counts

    assert anyio.run(together) == [1, 1, 1]
    with client(data_dir, env, "check") as check:
        assert check.run(scenario.list_memories, limit=10)["count"] == 3
    log = (data_dir / "server.log").read_text(encoding="utf-8")
    assert log.count("owner_listening") == 1, log


def test_bridge_stdout_carries_only_the_protocol_and_it_exits_when_the_client_leaves(
        fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_list", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}},
    ]
    env = server_env(data_dir, shared_env(fake, LOG_LEVEL="DEBUG"))
    with open(data_dir.parent / "raw-stderr.log", "w", encoding="utf-8") as errlog:
        process = subprocess.Popen([*memtrove_command(), "serve"], env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=errlog)
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for request in requests:
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        if "id" in request:
            answers.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    rest = process.stdout.read()
    assert process.wait(timeout=GONE_TIMEOUT) == 0
    assert rest == b""
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"]["serverInfo"]["name"] == "memtrove"
    assert answers[1]["result"]["structuredContent"]["count"] == 0
    assert answers[2]["error"]["code"] == -32601


def test_client_configured_for_another_embedder_is_refused(fake: QuickFakeOpenAIServer, data_dir: Path) -> None:
    with client(data_dir, shared_env(fake), "desktop") as desktop:
        desktop.run(scenario.list_memories, limit=1)
        pid = owner_pid(data_dir)
        done = run_cli(["serve"], data_dir, shared_env(fake, OPENAI_EMBED_DIMS="64"), timeout=60.0)
        assert done.returncode == 2, done
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"pid {pid}" in lines[0] and "openai-compatible/fake/32" in lines[0], lines[0]
        assert "openai-compatible/fake/64" in lines[0], lines[0]
        assert desktop.run(scenario.list_memories, limit=1)["count"] == 0
