"""The shared server gives way: an idle one hands its data dir to ``memtrove serve --transport http``,
``memtrove ui`` and ``memtrove doctor``; one with clients is named with them and with ``memtrove stop``;
``memtrove stop`` stops it (or says why not); a deleted data dir ends it. Real processes throughout: the
owner is started as a user starts it, by a command or a client's ``memtrove serve``.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from entrypoints.shared import lock_is_held, read_holder
from tests.e2e import artifact_scenario, scenario
from tests.e2e.test_long_ingest import wait_committed
from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import (blocking, free_port, http_server, http_session, memtrove_command, owner_pid,
                                     run_cli, server_env, stdio_session, stop_owner)

pytestmark = pytest.mark.slow

DIMS = 32
GONE_TIMEOUT = 30.0  # seconds an owner may take to let go (it checks its data dir every 2 s)
NOTE = "The walrus named Gustav sleeps in the boathouse behind the lighthouse."


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


def shared_env(fake: QuickFakeOpenAIServer, **extra: str) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "600", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
            "OPENAI_MAX_RETRIES": "1", **extra}


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    yield data
    stop_owner(data)  # owners are detached: never leave one running past its test


def cli(data: Path, env: dict[str, str], *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = run_cli(list(args), data, env, timeout=180)
    assert done.returncode == code, f"memtrove {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def ingest_note(tmp_path: Path, data: Path, env: dict[str, str]) -> int:
    """``memtrove ingest`` of one note: the command starts the shared server, which stays (idle) after it."""
    note = tmp_path / "walrus.md"
    note.write_text(NOTE + "\n", encoding="utf-8")
    cli(data, env, "ingest", str(note))
    pid = owner_pid(data)
    assert pid is not None and read_holder(data.resolve())["kind"] == "stdio"
    return pid


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = GONE_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def found_note(url: str) -> list[str]:
    async def search() -> list[str]:
        async with http_session(url) as client:
            hits = await artifact_scenario.hybrid(client, "walrus Gustav boathouse", limit=5)
            return [hit.get("snippet", "") for hit in hits["results"]]
    return anyio.run(search)


def test_an_idle_owner_hands_the_data_dir_to_an_http_server(fake: QuickFakeOpenAIServer, tmp_path: Path,
                                                             data_dir: Path) -> None:
    env = shared_env(fake)
    first = ingest_note(tmp_path, data_dir, env)
    with http_server(data_dir, env, stderr_path=tmp_path / "http-stderr.log") as server:
        assert read_holder(data_dir.resolve()) == {"pid": server.process.pid, "kind": "http",
                                                   "url": f"http://127.0.0.1:{server.port}/mcp/"}
        assert not alive(first)
        assert any("Gustav" in snippet for snippet in found_note(server.mcp_url))  # written through the first
    log = (data_dir / "server.log").read_text(encoding="utf-8")
    assert "owner_stop_asked clients=0 force=False hand_over=True" in log and "owner_stopped" in log, log
    assert "Traceback" not in log, log


def test_an_owner_with_a_client_is_named_with_memtrove_stop_which_stops_it_when_forced(
        fake: QuickFakeOpenAIServer, tmp_path: Path, data_dir: Path) -> None:
    env = shared_env(fake)
    with blocking(stdio_session(data_dir, env, stderr_path=tmp_path / "agent-stderr.log")) as agent:
        kept = agent.run(scenario.store, "The agent's note: the heron is called Mabel", "fact", 0.9)["id"]
        pid = owner_pid(data_dir)
        refused = run_cli(["serve", "--transport", "http", "--port", str(free_port())], data_dir, env, timeout=60)
        assert refused.returncode == 2 and refused.stdout == "", refused
        [line] = refused.stderr.strip().splitlines()
        assert f"pid {pid}" in line and "1 client connected" in line and "`memtrove stop --force`" in line, line
        ui = run_cli(["ui", "--no-browser", "--port", str(free_port())], data_dir, env, timeout=60)
        assert ui.returncode == 2 and "the page needs an HTTP server" in ui.stderr, ui
        assert "1 client connected" in ui.stderr and "memtrove stop" in ui.stderr, ui
        assert "the page is at" not in ui.stdout, ui  # no address of a page that will not be served

        stop = cli(data_dir, env, "stop", code=1)
        assert stop.stdout == "" and f"pid {pid}" in stop.stderr and "1 client connected" in stop.stderr, stop
        assert "--force" in stop.stderr, stop
        assert owner_pid(data_dir) == pid  # left running, its client served
        assert agent.run(scenario.list_memories, limit=5)["count"] == 1

        forced = cli(data_dir, env, "stop", "--force")
        assert forced.stdout == (f"stopped the memtrove server pid {pid} of the data dir {data_dir.resolve()}; "
                                 "1 client was disconnected (a client's next call starts it again)\n"), forced
        assert not alive(pid) and not lock_is_held(data_dir.resolve())
        # The client's next call starts a new server, and finds what it stored.
        assert scenario.ids(agent.run(scenario.list_memories, limit=5)) == [kept]
        assert owner_pid(data_dir) not in (None, pid)
    log = (data_dir / "server.log").read_text(encoding="utf-8")
    assert "owner_stop_refused clients=1" in log and "owner_stop_asked clients=1 force=True" in log, log


def test_memtrove_stop_stops_an_idle_owner_and_says_when_none_runs(fake: QuickFakeOpenAIServer, tmp_path: Path,
                                                                   data_dir: Path) -> None:
    env = shared_env(fake)
    pid = ingest_note(tmp_path, data_dir, env)
    elsewhere = tmp_path / "other"  # --data-dir wins over MEMTROVE_DATA_DIR
    stopped = run_cli(["stop", "--data-dir", str(data_dir)], elsewhere, env)
    assert stopped.returncode == 0, stopped
    assert stopped.stdout == f"stopped the memtrove server pid {pid} of the data dir {data_dir.resolve()}\n"
    assert not alive(pid) and not lock_is_held(data_dir.resolve())
    assert not (data_dir / "memtrove.sock").exists()
    log = (data_dir / "server.log").read_text(encoding="utf-8")
    assert "owner_stop_asked clients=0 force=False hand_over=False" in log and "owner_stopped" in log, log
    again = cli(data_dir, env, "stop")
    assert again.stdout == f"no memtrove server holds the data dir {data_dir.resolve()}\n", again
    assert cli(data_dir, env, "search", "walrus Gustav").stdout.count("walrus.md") == 1  # a new server, same data


def test_memtrove_ui_and_doctor_take_the_data_dir_over_and_stop_ends_the_page_when_forced(
        fake: QuickFakeOpenAIServer, tmp_path: Path, data_dir: Path) -> None:
    env = shared_env(fake)
    ingest_note(tmp_path, data_dir, env)
    doctor = cli(data_dir, env, "doctor")  # was: refused while the idle server held the data dir
    assert "ok" in doctor.stdout and not lock_is_held(data_dir.resolve())

    owner = ingest_note(tmp_path, data_dir, env)
    port = free_port()
    with open(tmp_path / "ui-stderr.log", "w", encoding="utf-8") as errlog:
        ui = subprocess.Popen([*memtrove_command(), "ui", "--no-browser", "--port", str(port)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=errlog, env=server_env(data_dir, env), text=True)
    try:
        assert ui.stdout is not None
        assert ui.stdout.readline() == f"memtrove: the page is at http://127.0.0.1:{port}/ui/\n"
        deadline = time.monotonic() + 60
        while not answered(f"http://127.0.0.1:{port}/health"):
            assert ui.poll() is None and time.monotonic() < deadline, (tmp_path / "ui-stderr.log").read_text()
            time.sleep(0.2)
        assert not alive(owner) and read_holder(data_dir.resolve())["pid"] == ui.pid
        assert any("Gustav" in snippet for snippet in found_note(f"http://127.0.0.1:{port}/mcp/"))

        refused = cli(data_dir, env, "stop", code=1)  # an HTTP server's clients are not known: --force
        assert f"pid {ui.pid}" in refused.stderr and "--force" in refused.stderr, refused
        assert ui.poll() is None
        stopped = cli(data_dir, env, "stop", "--force")
        assert stopped.stdout == f"stopped the memtrove server pid {ui.pid} of the data dir {data_dir.resolve()}\n"
        assert ui.wait(timeout=GONE_TIMEOUT) == 0
    finally:
        if ui.poll() is None:
            ui.send_signal(signal.SIGKILL)
            ui.wait()


def answered(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("connected", [False, True], ids=["idle", "with-a-client"])
def test_an_owner_whose_data_dir_is_deleted_exits(fake: QuickFakeOpenAIServer, tmp_path: Path, data_dir: Path,
                                                  connected: bool) -> None:
    env = shared_env(fake)
    if not connected:
        pid = ingest_note(tmp_path, data_dir, env)
        shutil.rmtree(data_dir)
        assert wait_gone(pid), "the owner kept running on a deleted data dir"
        return
    with blocking(stdio_session(data_dir, env, stderr_path=tmp_path / "agent-stderr.log")) as agent:
        agent.run(scenario.store, "Stored into a data dir about to be deleted", "fact", 0.9)
        pid = owner_pid(data_dir)
        assert pid is not None
        shutil.rmtree(data_dir)
        assert wait_gone(pid), "the owner kept running on a deleted data dir"
        # The client goes on with a new server on a new, empty data dir.
        assert agent.run(scenario.list_memories, limit=5)["count"] == 0
        assert owner_pid(data_dir) not in (None, pid) and (data_dir / "memtrove.sock").exists()


DOC = "\n\n".join(f"Entry {i}. The harbour pilot logged tide number {i}; the dredger moved buoy {i} "
                  f"and the night crew painted bollard {i} orange." for i in range(70))
DOC += "\n\nThe last entry names the quokkafjord beacon, lit on the final night."


class HeldFake(QuickFakeOpenAIServer):
    """The fake OpenAI server, holding every request of several texts (an ingest's) until released."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.released = threading.Event()

    def _embeddings(self, body: Any, outcome: Any) -> tuple[int, dict[str, Any]]:
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, list) and len(texts) > 1:
            self.released.wait(300)
        return super()._embeddings(body, outcome)


def test_an_ingest_still_running_when_the_owner_yields_is_finished_by_the_next_server(tmp_path: Path,
                                                                                      data_dir: Path) -> None:
    # The ingest's embeddings are held: it outlives its call (budget 1 s) and the owner's bounded wait for
    # work in flight, so the owner stops with it unfinished, and the HTTP server that took over resumes it.
    with HeldFake(default_dimensions=DIMS) as fake:
        env = shared_env(fake, MEMTROVE_CALL_BUDGET="1", OPENAI_BATCH_SIZE="16", CHUNK_TARGET_TOKENS="40",
                         CHUNK_OVERLAP_TOKENS="8", SINGLE_PIECE_MAX_TOKENS="40")
        with blocking(stdio_session(data_dir, env, stderr_path=tmp_path / "agent-stderr.log")) as agent:
            answer = agent.run(artifact_scenario.ingest, artifact_type="doc", source_system="logbook",
                               source_id="harbour", content=DOC)
            assert answer["status"] == "indexing", answer  # it goes on after the call
        with http_server(data_dir, env, stderr_path=tmp_path / "http-stderr.log") as server:
            log = (data_dir / "server.log").read_text(encoding="utf-8")
            assert "owner_stopped_with_work_in_flight" in log and "Traceback" not in log, log
            fake.released.set()

            async def finished() -> tuple[dict[str, Any], list[str]]:
                async with http_session(server.mcp_url) as client:
                    await wait_committed(client, answer["artifact_id"], timeout=240.0)
                    hits = await artifact_scenario.hybrid(client, "quokkafjord beacon final night", limit=3)
                    full = await artifact_scenario.get(client, answer["artifact_id"], include_content=True)
                    return full, artifact_scenario.artifact_ids(hits)
            view, found = anyio.run(finished)
        assert view["content"] == DOC and view["status"] == "indexed" and answer["artifact_id"] in found
