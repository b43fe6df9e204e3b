"""The stdio bridge: ``memtrove serve`` pipes its client's MCP session to the data dir's one server.

Bytes pass through as they are. The bridge reads only the ``id`` and ``method`` of what the client
sends and the ``id`` of what the server answers, to know which requests are in flight. When the
server dies, those get an error ("memtrove server restarted; retry") and the next message finds (or
starts) a new server. A session opened with the ``initialize`` handshake (2025-era clients) goes on:
the bridge first replays that ``initialize`` (under its own id; the answer is not forwarded) and
``notifications/initialized``; 2026-era requests carry their protocol envelope and need nothing.
Nothing but the protocol is ever written to stdout.

While a server it started is still loading, the bridge answers ``initialize``, ``server/discover``
and ``tools/list`` itself when it holds that server's answer to the same request (entrypoints/answers.py);
once the server listens, it asks the server each of those again and drops what differs.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from entrypoints.answers import Answers
from entrypoints.early import EarlyAnswers
from entrypoints.launcher import START_TIMEOUT, OwnerLauncher, Unavailable
from entrypoints.lazylog import logger
from entrypoints.wire import NO_ID, peek, read_lines, response_key

if TYPE_CHECKING:
    from entrypoints.start import StartSettings

RESTARTED = "memtrove server restarted; retry"
SERVER_ERROR = -32000  # JSON-RPC "server error" range
CHUNK = 1 << 16
CLOSE_TIMEOUT = 5.0  # after the client leaves, how long answers still in flight may take
SEND_ATTEMPTS = 3


def run_bridge(start: StartSettings) -> int:
    bridge = Bridge(OwnerLauncher(start.data_path, start.embedder, start.toolsets), Answers(start.answers))
    try:
        bridge.open()
    except Unavailable as exc:
        print(f"memtrove: {exc}", file=sys.stderr, flush=True)
        return 2
    return bridge.run()


class Bridge:
    """Two pumps: client (stdin) to server (socket) on the calling thread, server to client on another."""

    def __init__(self, owner: OwnerLauncher, answers: Answers | None = None) -> None:
        self.owner = owner
        self.early = EarlyAnswers(answers, owner.toolsets)
        self.lock = threading.Lock()  # guards everything below; taken before ``out`` when both are
        self.changed = threading.Condition(self.lock)
        self.out = threading.Lock()  # one writer on stdout at a time
        self.conn: socket.socket | None = None
        self.generation = 0  # counts connections; a lost one is handled once
        self.leftover = b""  # bytes read past the replayed initialize's answer
        self.closing = False
        self.inflight: dict[Any, None] = {}
        self.init_line: bytes | None = None
        self.init_key: Any = NO_ID
        self.init_answered = False
        self.initialized_line: bytes | None = None
        self.replays = 0
        self.pending = False  # the first server is starting: answers come from ``answers`` or wait for it
        self.waiting: set[Any] = set()  # requests waiting for that server

    def open(self) -> None:
        """Connect to the data dir's server; when it has to start, wait for it in the background."""
        with self.lock:
            conn = self.owner.connect(wait=False)
            if conn is not None:
                self._install(conn)
                return
            self.pending = True
        threading.Thread(target=self._await_first, name="memtrove-bridge-start", daemon=True).start()

    def _await_first(self) -> None:
        try:
            conn = self.owner.connect()
            with self.lock:
                self._install(conn)
                self.pending = False
                self.changed.notify_all()
        except Unavailable as exc:  # as a start that fails at once: the reason on stderr, exit 2
            print(f"memtrove: {exc}", file=sys.stderr, flush=True)
            with self.lock:
                for key in self.waiting:
                    self._answer(key, f"memtrove server unavailable: {exc}")
            os._exit(2)

    def run(self) -> int:
        down = threading.Thread(target=self._pump_down, name="memtrove-bridge-down", daemon=True)
        down.start()
        for line in read_lines(lambda: os.read(0, CHUNK)):
            key, method = peek(line)
            self._forward(line, key, method)
        with self.lock:
            self.closing = True
            conn = self.conn
            self.changed.notify_all()
        if conn is not None:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_WR)  # the server ends the session and closes: the pump stops
        down.join(CLOSE_TIMEOUT)
        return 0

    # -- client to server --------------------------------------------------------------------
    def _forward(self, line: bytes, key: Any, method: str | None) -> None:
        with self.lock:
            if self.pending:
                if self._answer_early(line, key, method):
                    return
                if key is not NO_ID:
                    self.waiting.add(key)
                self.changed.wait_for(lambda: not self.pending)
                self.waiting.discard(key)
        for _ in range(SEND_ATTEMPTS):
            with self.lock:
                if self.conn is None:
                    try:
                        self._connect()
                    except Unavailable as exc:
                        logger.warning("bridge_server_unavailable reason={}", exc)
                        if key is not NO_ID:
                            self._answer(key, f"memtrove server unavailable: {exc}")
                        return
                conn, generation = self.conn, self.generation
                if method == "initialize":
                    self.init_line, self.init_key, self.init_answered = line, key, False
                if key is not NO_ID:
                    self.inflight[key] = None
                    self.early.watch(key, method, line, self.owner.answers_key)
            assert conn is not None
            try:
                conn.sendall(line)
                if method == "notifications/initialized":
                    self.initialized_line = line  # replayed after initialize from now on
                return
            except OSError:  # the server is gone; it never read this line, so it is sent again
                with self.lock:
                    if key is not NO_ID and self.inflight.pop(key, NO_ID) is NO_ID:
                        return  # already answered as failed
                    self.changed.wait_for(lambda: self.generation != generation or self.conn is None,
                                          CLOSE_TIMEOUT)
        if key is not NO_ID:
            self._answer(key, RESTARTED)

    def _answer_early(self, line: bytes, key: Any, method: str | None) -> bool:
        """Answer a request from the recorded answers while the server starts (the lock held)."""
        if method == "notifications/initialized" and self.init_answered:
            self.initialized_line = line  # sent after the replayed initialize
            return True
        reply = self.early.answer(line, key, method) if key is not NO_ID else None
        if reply is None:
            return False
        if method == "initialize":
            self.init_line, self.init_key, self.init_answered = line, key, True
        self._write(reply)
        return True

    def _connect(self) -> None:
        self._install(self.owner.connect())

    def _install(self, conn: socket.socket) -> None:
        """Use ``conn`` (the lock held), first replaying the session's handshake to a server that has not
        seen it, then asking it again what was answered before it listened."""
        leftover = b""
        try:
            if self.init_line is not None and self.init_key in self.inflight and not self.init_answered:
                conn.sendall(self.init_line)  # the client still waits for this answer
            elif self.init_line is not None and self.init_answered:
                leftover, answered = self._replay(conn)
                if self.initialized_line is not None:
                    conn.sendall(self.initialized_line)
                self.early.check_initialize(self.init_line, answered)
            for check in self.early.checks(self.generation):
                conn.sendall(check)
        except (OSError, Unavailable) as exc:
            conn.close()
            raise Unavailable(f"the memtrove server closed during the session's handshake: {exc}") from None
        self.conn, self.leftover = conn, leftover
        self.generation += 1
        self.changed.notify_all()
        logger.debug("bridge_connected generation={}", self.generation)

    def _replay(self, conn: socket.socket) -> tuple[bytes, bytes]:
        """Send the client's initialize again under an id of our own; its answer is read here, not forwarded."""
        assert self.init_line is not None
        self.replays += 1
        message = json.loads(self.init_line)
        message["id"] = replay_id = f"memtrove-bridge-replay-{self.replays}"
        conn.settimeout(START_TIMEOUT)
        conn.sendall(json.dumps(message).encode() + b"\n")
        buffer = bytearray()
        while True:
            chunk = conn.recv(CHUNK)
            if not chunk:
                raise Unavailable("connection closed")
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end + 1])
                del buffer[:end + 1]
                if response_key(line)[0] == replay_id:
                    conn.settimeout(None)
                    logger.info("bridge_replayed_initialize replays={}", self.replays)
                    return bytes(buffer), line

    # -- server to client --------------------------------------------------------------------
    def _pump_down(self) -> None:
        generation = 0
        while True:
            with self.lock:
                self.changed.wait_for(lambda: self.generation != generation or self.closing)
                if self.generation == generation:
                    return  # the client left while no server was connected
                generation, conn, leftover = self.generation, self.conn, self.leftover
            if conn is not None and not self._relay(conn, leftover):
                return
            with self.lock:
                if self.closing:
                    return
                if self._lost(generation) and self.conn is None:
                    try:
                        self._connect()
                    except Unavailable as exc:
                        self._answer(self.init_key, f"memtrove server unavailable: {exc}")
                        self.inflight.pop(self.init_key, None)
                        self.init_line = None

    def _relay(self, conn: socket.socket, leftover: bytes) -> bool:
        """Copy the server's lines to stdout until it closes; False once stdout is gone."""
        for line in read_lines(lambda: conn.recv(CHUNK), leftover):
            key, succeeded = response_key(line)
            if key is not NO_ID:
                with self.lock:
                    self.inflight.pop(key, None)
                    if key == self.init_key:
                        self._initialize_answered(succeeded)
                    taken = self.early.take(key)
                if taken is not None:
                    own, instead = self.early.settle(taken, line, succeeded)
                    if instead is not None:
                        with suppress(OSError):
                            self._write(instead)
                    if own:
                        continue
            try:
                self._write(line)
            except OSError:
                with self.lock:
                    self.closing = True
                return False
        return True

    def _initialize_answered(self, succeeded: bool) -> None:
        """A refused initialize (a 2026-era connection refuses it: each request then carries its own
        protocol envelope) is no handshake to replay."""
        if succeeded:
            self.init_answered = True
        else:
            self.init_line, self.init_key, self.init_answered = None, NO_ID, False

    def _lost(self, generation: int) -> bool:
        """The server of ``generation`` closed (the lock held): fail what was in flight. True: the client
        still waits for its initialize, which is sent again at once."""
        if generation != self.generation or self.conn is None:
            return False
        with suppress(OSError):
            self.conn.close()
        self.conn = None
        self.early.forget()
        keep_init = self.init_key in self.inflight and not self.init_answered
        failed = [key for key in self.inflight if not (keep_init and key == self.init_key)]
        for key in failed:
            del self.inflight[key]
            self._answer(key, RESTARTED)
        logger.warning("bridge_lost_server failed_requests={}", len(failed))
        self.changed.notify_all()
        return keep_init

    def _answer(self, key: Any, message: str) -> None:
        error = {"jsonrpc": "2.0", "id": key, "error": {"code": SERVER_ERROR, "message": message}}
        with suppress(OSError):
            self._write(json.dumps(error).encode() + b"\n")

    def _write(self, data: bytes) -> None:
        with self.out:
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
