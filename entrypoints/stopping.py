"""How the shared server stops when asked (``memtrove stop``, a command taking the data dir over) or when
its data dir is gone; the asking side and the lines exchanged are in entrypoints/handover.py."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
from anyio import CancelScope
from anyio.abc import ByteStream, SocketAttribute
from loguru import logger

from entrypoints.handover import answer_line

DATA_DIR_CHECK = 2.0  # seconds between looks at whether the data dir (its lock file) is still there
LEAVING = 2.0  # seconds a request to stop waits for connected clients to leave before it is refused
DRAIN = 10.0  # seconds background work in flight (a long ingest) may take to finish once the server stops


class Stops:
    """The requests to stop this server took, answered once it has stopped (the first to ask for the data
    dir gets its lock); ``gone``: it stopped because its data dir was deleted."""

    def __init__(self) -> None:
        self.waiting: list[tuple[socket.socket, bool]] = []
        self.gone = False

    async def answer(self, stream: ByteStream, force: bool, hand_over: bool, count: Callable[[], int],
                     scope: CancelScope) -> None:
        """Refuse (clients connected, not forced) or say it stops, and stop: the serving scope ends."""
        pid = os.getpid()
        deadline = anyio.current_time() + LEAVING
        while count() and not force and anyio.current_time() < deadline:
            await anyio.sleep(0.05)  # a command that has just ended may not be seen to have left yet
        clients = count()
        if clients and not force:
            logger.info("owner_stop_refused clients={}", clients)
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(answer_line("refused", pid=pid, clients=clients))
            await stream.aclose()
            return
        raw = stream.extra(SocketAttribute.raw_socket).dup()  # answered after the event loop has ended
        raw.setblocking(True)
        hand_over = hand_over and not any(taken for _, taken in self.waiting)  # one data dir, one taker
        self.waiting.append((raw, hand_over))
        logger.info("owner_stop_asked clients={} force={} hand_over={}", clients, force, hand_over)
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(answer_line("stopping", pid=pid, clients=clients))
        scope.cancel()

    def finish(self, lock_fd: int | None) -> None:
        """Tell whoever asked that the server has stopped; the data dir's lock goes to the one who asked
        for it. Their connections stay open until the process ends: that end is what they wait for."""
        for conn, hand_over in self.waiting:
            line = answer_line("stopped", pid=os.getpid(), lock=hand_over and lock_fd is not None)
            with suppress(OSError):
                if hand_over and lock_fd is not None:
                    socket.send_fds(conn, [line], [lock_fd])
                else:
                    conn.sendall(line)

    async def watch(self, replaced: Callable[[], bool], scope: CancelScope) -> None:
        """End the serving scope once the data dir's lock file is deleted or replaced: the stores this
        server writes are gone (every write would be lost), and a client's next start makes a new one."""
        while not replaced():
            await anyio.sleep(DATA_DIR_CHECK)
        logger.warning("owner_data_dir_gone pid={} (its lock file was deleted or replaced): stopping", os.getpid())
        self.gone = True
        scope.cancel()


def drain(gate: Any, timeout: float = DRAIN) -> None:
    """Let the calls still running in the background (an ingest past its call's answer) finish; past
    ``timeout`` they are left to the next server (their jobs stay open in the store and are resumed)."""
    started = time.monotonic()
    if gate.close(timeout):
        logger.info("owner_drained latency_ms={:.0f}", (time.monotonic() - started) * 1000)
    else:
        logger.warning("owner_stopped_with_work_in_flight after_s={:.0f} (open ingests are resumed by the next "
                       "server)", timeout)
