"""Finding the data dir's server for a bridge, and starting it (detached) when none runs."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from entrypoints.lazylog import logger

from entrypoints.shared import (OWNER_BUSY, bridge_hello, connect, describe, lock_is_held, log_path, memtrove_command,
                                read_holder, socket_path)

START_TIMEOUT = 60.0  # seconds for a started server to listen (stores opened, profile checked)
POLL_SECONDS = 0.05


class Unavailable(Exception):
    """No server could be reached or started; the message says why."""


class OwnerLauncher:
    """Finds the data dir's server, starting one (detached) when none runs."""

    def __init__(self, data_dir: Path, embedder: str, toolsets: tuple[str, ...] = ("core",)) -> None:
        self.data_dir = data_dir
        self.embedder = embedder  # what this client is configured for; the running server must match
        self.toolsets = toolsets  # the tools this client sees (the server serves each connection its own)
        self.path = socket_path(data_dir)
        self.log = log_path(data_dir)
        self.processes: list[subprocess.Popen[bytes]] = []  # kept only to reap them
        self.started: subprocess.Popen[bytes] | None = None  # the server this launcher started and waits for
        self.log_offset = 0
        self.answers_key: str | None = None  # what the connected server's answers are made of (entrypoints/answers.py)

    def connect(self, wait: bool = True) -> socket.socket | None:
        """A connection to the data dir's server, starting one when none runs. ``wait=False``: None at
        once when none listens yet (one is started, or starting); a later ``connect()`` waits for it."""
        sock = self._reach(wait)
        if sock is None:
            return None
        holder = read_holder(self.data_dir)
        self.answers_key = holder.get("answers")
        if holder.get("embedder", self.embedder) != self.embedder:
            sock.close()
            raise Unavailable(f"the data dir {self.data_dir} is served by memtrove pid {holder.get('pid', '?')} with "
                              f"the embedder {holder['embedder']}, but this client is configured for {self.embedder} "
                              "(MEMTROVE_EMBEDDER, MEMTROVE_LOCAL_MODEL, OPENAI_EMBED_MODEL, OPENAI_EMBED_DIMS): give every client of a "
                              "data dir the same settings, or use another MEMTROVE_DATA_DIR")
        try:
            sock.sendall(bridge_hello(self.toolsets))
        except OSError as exc:
            sock.close()
            raise Unavailable(f"the memtrove server closed the connection: {exc}") from None
        return sock

    def _reach(self, wait: bool = True) -> socket.socket | None:
        deadline = time.monotonic() + START_TIMEOUT
        holder: dict[str, Any] = {}
        while True:
            started = self.started
            sock = connect(self.path)
            if sock is not None:
                self.started = None  # listening: a later loss starts afresh
                return sock
            if lock_is_held(self.data_dir):  # a server starting, or a command (doctor) that will let go
                holder = read_holder(self.data_dir)
                if holder.get("kind") == "http":
                    raise Unavailable(describe(self.data_dir, holder))
                elsewhere = holder.get("socket")  # its XDG_RUNTIME_DIR may differ from ours
                if elsewhere and elsewhere != str(self.path) and (sock := connect(elsewhere)) is not None:
                    self.started = None
                    return sock
            elif started is None or started.poll() is not None:
                holder = {}
                if started is not None and started.returncode != OWNER_BUSY:
                    self.started = None
                    raise Unavailable(self._failure(started.returncode, self.log_offset))
                self.log_offset = self._log_size()
                self.started = self._start()
            if not wait:
                return None
            if time.monotonic() > deadline:
                if holder.get("kind") not in (None, "stdio"):
                    raise Unavailable(describe(self.data_dir, holder))
                raise Unavailable(f"the memtrove server did not listen on {self.path} within {START_TIMEOUT:.0f}s; "
                                  f"see {self.log}")
            time.sleep(POLL_SECONDS)

    def _start(self) -> subprocess.Popen[bytes]:
        for done in [p for p in self.processes if p.poll() is not None]:
            self.processes.remove(done)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            process = subprocess.Popen(
                [*memtrove_command(), "serve", "--owner"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log, start_new_session=True, env={**os.environ, "MEMTROVE_DATA_DIR": str(self.data_dir)})
        finally:
            os.close(log)
        self.processes.append(process)
        logger.info("bridge_started_server pid={} data_dir={}", process.pid, self.data_dir)
        return process

    def _log_size(self) -> int:
        try:
            return self.log.stat().st_size
        except OSError:
            return 0

    def _failure(self, code: int | None, offset: int) -> str:
        """The server's own one-line reason (``memtrove: ...``), else its exit code and where its log is."""
        try:
            with open(self.log, "rb") as log:
                log.seek(offset)
                lines = log.read().decode("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        reasons = [line.removeprefix("memtrove: ") for line in lines if line.startswith("memtrove: ")]
        return reasons[-1] if reasons else f"the memtrove server exited with code {code} before listening; see {self.log}"
