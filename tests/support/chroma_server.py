"""A real Chroma server for the tests: ``chroma run --path DIR --port N`` on loopback, started and stopped here.

The command is the ``chroma`` console script of this interpreter's environment (the ``chromadb``
package installs it), so the server is the same version as the client memtrove talks through.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

HOST = "127.0.0.1"
START_TIMEOUT = 60.0  # seconds until the heartbeat must answer
STOP_TIMEOUT = 10.0
HEARTBEAT = "/api/v2/heartbeat"


def chroma_command() -> str:
    """The venv's ``chroma`` script (beside this Python), else one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise RuntimeError("the chroma command is not installed (it comes with the chromadb package)")
    return found


@dataclass
class ChromaServer:
    """A running ``chroma run`` process."""

    process: subprocess.Popen[bytes]
    path: Path
    port: int
    log_path: Path
    host: str = HOST

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The settings that point memtrove at this server."""
        return {"CHROMA_HOST": self.host, "CHROMA_PORT": str(self.port)}

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then SIGKILL if it does not exit in ``timeout`` seconds; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        return self.process.returncode


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait_heartbeat(server: ChromaServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"chroma run exited with {server.process.returncode} before answering its "
                               f"heartbeat; log:\n{server.log()[-4000:]}")
        try:
            answer = httpx.get(server.url + HEARTBEAT, timeout=2.0)
            if answer.status_code == 200:
                return
            last = f"HTTP {answer.status_code}: {answer.text[:200]}"
        except httpx.HTTPError as exc:
            last = repr(exc)
        time.sleep(0.1)
    raise TimeoutError(f"chroma heartbeat did not answer within {timeout:.0f}s ({last}); log:\n{server.log()[-4000:]}")


def start_chroma_server(path: Path | str, log_path: Path | None = None, *, timeout: float = START_TIMEOUT,
                        attempts: int = 3) -> ChromaServer:
    """Start ``chroma run`` persisting to ``path`` on a free loopback port; return once its heartbeat answers."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    log_path = log_path or path.parent / f"{path.name}-chroma.log"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
    for attempt in range(1, attempts + 1):
        port = _free_port()
        with open(log_path, "a", encoding="utf-8") as log:
            process = subprocess.Popen(
                [chroma_command(), "run", "--path", str(path), "--host", HOST, "--port", str(port)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        server = ChromaServer(process, path, port, log_path)
        try:
            _wait_heartbeat(server, timeout)
            return server
        except RuntimeError:
            server.stop()
            # The port may have been taken between the probe and the bind: try another.
            if attempt == attempts or "in use" not in server.log().lower():
                raise
        except BaseException:
            server.stop()
            raise
    raise AssertionError("unreachable")


@contextmanager
def chroma_server(path: Path | str, log_path: Path | None = None, **options: object) -> Iterator[ChromaServer]:
    """``start_chroma_server`` as a context manager that always stops the process."""
    server = start_chroma_server(path, log_path, **options)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
