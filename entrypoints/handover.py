"""Asking the data dir's shared server to stop, and handing its data dir over to the command that asked.

A command that needs the data dir (``memtrove serve --transport http``, ``memtrove ui``, ``memtrove doctor``)
and ``memtrove stop`` connect to the server's socket and send one line instead of a bridge's hello:
``{"memtrove_control": {"stop": {"force": F, "hand_over": H}}}``. The server answers at once, one line:
``refused`` (clients are connected and ``force`` is not set: nothing changes) or ``stopping``. Then it
stops as on SIGTERM: no new connection, sessions end (a tool call in flight finishes first), background
work in flight gets a bounded time to finish (an ingest that outlasts it stays an open job in the store,
which the next server resumes, as after a crash), the stores close. Its last line is ``stopped``; with
``hand_over`` the lock file's descriptor comes with it (SCM_RIGHTS), so the asker holds the data dir's
``flock`` from that moment, with no gap in which a bridge could start another server. The server then
exits, and the asker waits for that (the connection's end) before it opens the stores itself.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

CONTROL_KEY = "memtrove_control"
CONTROL_VERSION = 1  # written into an owner's lock record: an older owner does not understand these lines
ANSWER_TIMEOUT = 15.0  # seconds for the server's first answer (its loop may wait for the GIL a moment)
STOP_TIMEOUT = 120.0  # seconds for it to stop once it said it would (calls in flight finish first)
CHUNK = 1 << 16


def stop_request(force: bool, hand_over: bool) -> bytes:
    return json.dumps({CONTROL_KEY: {"stop": {"force": force, "hand_over": hand_over}}}).encode() + b"\n"


def read_request(line: bytes) -> tuple[bool, bool] | None:
    """(force, hand_over) of a stop request; None when the line is not one (a bridge's hello, MCP)."""
    if CONTROL_KEY.encode() not in line[:64]:
        return None
    try:
        asked = json.loads(line)[CONTROL_KEY]["stop"]
        return bool(asked.get("force")), bool(asked.get("hand_over"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def answer_line(kind: str, **fields: Any) -> bytes:
    return json.dumps({CONTROL_KEY: {kind: fields}}).encode() + b"\n"


class StopFailed(Exception):
    """The server did not answer or did not stop in time; the message says which and where its log is."""


@dataclass
class Outcome:
    """What the server answered: ``refused`` (``clients`` connected), else stopped (and gone)."""

    pid: Any
    clients: int
    refused: bool
    lock_fd: int | None = None  # the data dir's lock, handed over


def ask_to_stop(path: str, force: bool, hand_over: bool, log: str = "server.log") -> Outcome | None:
    """Ask the server listening on ``path`` to stop; None when nothing listens there (gone, or not yet up)."""
    from entrypoints.shared import connect

    sock = connect(path)
    if sock is None:
        return None
    fds: list[int] = []
    try:
        sock.sendall(stop_request(force, hand_over))
        first, rest, fds = _read(sock, fds, ANSWER_TIMEOUT, b"", lambda data: b"\n" in data)
        if first is None:
            raise StopFailed(f"the memtrove server on {path} did not answer a request to stop within "
                             f"{ANSWER_TIMEOUT:.0f} s; see {log}")
        said = _parse(first)
        if said is None:
            return None  # it closed at once: it was stopping already
        kind, fields = said
        pid, clients = fields.get("pid"), int(fields.get("clients", 0))
        if kind == "refused":
            return Outcome(pid, clients, refused=True)
        done, _, fds = _read(sock, fds, STOP_TIMEOUT, rest, lambda _: False)  # until it exits
        if done is None:
            raise StopFailed(f"the memtrove server pid {pid} did not stop within {STOP_TIMEOUT:.0f} s; see {log}")
        lock = fds.pop(0) if fds and hand_over else None
        if lock is not None:
            os.set_inheritable(lock, False)
        return Outcome(pid, clients, refused=False, lock_fd=lock)
    except OSError:
        return None  # it went away meanwhile: the caller looks again
    finally:
        sock.close()
        for fd in fds:
            os.close(fd)


def _read(sock: socket.socket, fds: list[int], timeout: float, data: bytes, enough: Any
          ) -> tuple[bytes | None, bytes, list[int]]:
    """Bytes (and descriptors) until ``enough(data)`` or the end of the connection: (the first line, or
    everything at the end; the rest; the descriptors). None on a timeout."""
    deadline = time.monotonic() + timeout
    while not enough(data):
        left = deadline - time.monotonic()
        if left <= 0:
            return None, data, fds
        sock.settimeout(left)
        try:
            chunk, got, _, _ = socket.recv_fds(sock, CHUNK, 1)
        except TimeoutError:
            return None, data, fds
        fds.extend(got)
        if not chunk:
            return data, b"", fds
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest, fds


def _parse(line: bytes) -> tuple[str, dict[str, Any]] | None:
    try:
        said = json.loads(line)[CONTROL_KEY]
        kind, fields = next(iter(said.items()))
        return (kind, fields) if isinstance(fields, dict) else None
    except (ValueError, KeyError, TypeError, StopIteration, AttributeError):
        return None
