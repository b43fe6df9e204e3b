"""``memtrove stop`` (and the commands that take a data dir over) against holders that cannot hand it over:
a shared server of an older memtrove (its lock record has no ``control``), and ``memtrove doctor`` at work.
A small process holds the data dir's lock with such a record, as those would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from entrypoints.shared import lock_is_held
from tests.support.mcp_procs import free_port, run_cli

HOLD = """
import json, signal, sys, time
from pathlib import Path
from entrypoints.shared import DataDirLock
DataDirLock(Path(sys.argv[1])).acquire(json.loads(sys.argv[2]))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def hold(record: dict[str, Any]) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "data"), json.dumps(record)],
                                   stdout=subprocess.PIPE, text=True)
        started.append(process)
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        return process

    yield hold
    for process in started:
        process.kill()
        process.wait()


def test_an_older_shared_server_is_stopped_only_when_forced(tmp_path: Path, holder: Any) -> None:
    data = tmp_path / "data"
    older = holder({"kind": "stdio", "socket": str(data / "memtrove.sock"), "embedder": "local/minilm"})
    refused = run_cli(["stop"], data)
    assert refused.returncode == 1 and refused.stdout == "", refused
    assert f"older memtrove server, pid {older.pid}" in refused.stderr and "--force" in refused.stderr, refused
    http = run_cli(["serve", "--transport", "http", "--port", str(free_port())], data)
    assert http.returncode == 2 and f"pid {older.pid}" in http.stderr and "`memtrove stop`" in http.stderr, http
    assert older.poll() is None
    stopped = run_cli(["stop", "--force"], data)
    assert stopped.returncode == 0, stopped
    assert stopped.stdout == f"stopped the memtrove server pid {older.pid} of the data dir {data.resolve()}\n"
    assert older.wait(timeout=30) == 0 and not lock_is_held(data.resolve())


def test_a_doctor_at_work_is_never_stopped(tmp_path: Path, holder: Any) -> None:
    data = tmp_path / "data"
    doctor = holder({"kind": "doctor"})
    for args in (["stop"], ["stop", "--force"]):
        refused = run_cli(args, data)
        assert refused.returncode == 1 and refused.stdout == "", refused
        assert f"memtrove doctor (pid {doctor.pid}): let it finish" in refused.stderr, refused
    ui = run_cli(["ui", "--no-browser", "--port", str(free_port())], data)
    assert ui.returncode == 2 and "the page needs an HTTP server" in ui.stderr and "doctor" in ui.stderr, ui
    assert doctor.poll() is None and lock_is_held(data.resolve())
