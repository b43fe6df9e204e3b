"""The shared server: owns a data dir and serves one MCP session per connection on its Unix socket.

Started by the first stdio bridge (``memtrove serve --owner``, detached, logging to
``<data dir>/server.log``); every connection shares its one Runtime (container, stores, Chroma client).
It exits after MEMTROVE_IDLE_TIMEOUT seconds without a client (0: never), on SIGTERM, when asked to stop
(``memtrove stop``; a command taking the data dir over: entrypoints/handover.py), or once its data dir is
deleted (entrypoints/stopping.py).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from anyio import CancelScope
from anyio.abc import ByteStream
from loguru import logger
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_dual_era_loop
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from config.settings import TOOLSETS, Settings
from entrypoints.handover import CONTROL_VERSION, read_request
from entrypoints.shared import (OWNER_BUSY, DataDirBusy, DataDirLock, data_dir_of, embedder_label, log_path,
                                prepare_socket_dir, read_hello, socket_path)
from entrypoints.stopping import Stops, drain

READ_CHUNK = 1 << 16
MAX_MESSAGE = 64 << 20  # bytes in one JSON-RPC line; a 10 MB artifact, JSON-escaped, fits
LOG_ROTATE_BYTES = 10 << 20  # server.log moves to server.log.1 past this, at the next start


def run_owner(settings: Settings) -> int:
    from entrypoints.answers import answers_key
    from entrypoints.mcp.server import build_server
    from entrypoints.runtime import Runtime

    data_dir = data_dir_of(settings)
    path = socket_path(data_dir)
    lock = DataDirLock(data_dir)
    try:
        lock.acquire({"kind": "stdio", "socket": str(path), "embedder": embedder_label(settings),
                      "answers": answers_key(settings), "control": CONTROL_VERSION})
    except DataDirBusy as exc:
        print(f"memtrove: {exc.message}", file=sys.stderr, flush=True)
        return OWNER_BUSY
    try:
        log_to_file(log_path(data_dir))
        prepare_socket_dir(path, data_dir)
        preload_httpx()
        runtime = Runtime(settings, long_lived=True)
        stops = Stops()
        try:
            runtime.start()
            runtime.check_store()
            anyio.run(serve_connections, Servers(runtime, build_server), path, settings.memtrove_idle_timeout,
                      stops, lock.replaced)
        finally:
            if not stops.gone:  # a deleted data dir's writes are lost anyway: no waiting for them
                drain(runtime.gate)
            runtime.shutdown()
            if not stops.gone:
                with suppress(FileNotFoundError):
                    path.unlink()  # ours: we hold the lock
            logger.info("owner_stopped pid={}", os.getpid())
            stops.finish(lock.fd)
    except BaseException:
        lock.release()
        raise
    # The lock goes with the process, and with every thread of it: a background call that outlived the
    # drain writes nothing after the next server has opened the stores.
    sys.stderr.flush()
    os._exit(0)


def preload_httpx() -> None:
    """Import httpx before any thread runs: the openai client reads ``sys.modules["httpx"]`` without
    importing it, and a first call racing the warm-up thread's import found it half-initialized."""
    with suppress(ImportError):
        import httpx  # noqa: F401


def log_to_file(path: Path) -> None:
    """Point stderr (loguru's sink, and any stray output) at the data dir's log, rotated once past a size."""
    with suppress(OSError):
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    sys.stderr.flush()
    os.dup2(fd, 2)
    os.close(fd)


class Servers:
    """One MCP server per set of toolsets asked for, over the one Runtime (built on first ask)."""

    def __init__(self, runtime: Any, build: Callable[..., MCPServer]) -> None:
        self.runtime, self.build = runtime, build
        self.default: tuple[str, ...] = tuple(runtime.settings.toolsets)
        self.built: dict[tuple[str, ...], Any] = {}

    def lowlevel(self, toolsets: tuple[str, ...] | None = None) -> Any:
        """The low-level server of those toolsets (unknown names dropped; none left: the default)."""
        chosen = tuple(n for n in TOOLSETS if n in (toolsets or ())) or self.default
        if chosen not in self.built:
            self.built[chosen] = self.build(self.runtime, chosen)._lowlevel_server  # noqa: SLF001
        return self.built[chosen]


async def serve_connections(servers: Servers, path: Path, idle_timeout: float, stops: Stops,
                            replaced: Callable[[], bool]) -> None:
    """Listen on ``path`` (mode 0600) and run the MCP session loop once per accepted connection, with
    the toolsets the connection's bridge asks for in its first line (else the server's own); a first line
    that asks the server to stop is answered by ``stops``."""
    # MCPServer.run_stdio_async drives its low-level server the same way, once, over stdin/stdout.
    lowlevel = servers.lowlevel()
    options = lowlevel.create_initialization_options()
    clients = Clients()
    umask = os.umask(0o177)  # the socket is created 0600: no moment where another user could connect
    try:
        listener = await anyio.create_unix_listener(path, mode=0o600)  # replaces a stale socket file
    finally:
        os.umask(umask)

    async with listener, lowlevel.lifespan(lowlevel) as state, anyio.create_task_group() as tasks:
        async def session(stream: ByteStream) -> None:
            clients.opened()  # counted from the moment it connects: a stop asked meanwhile sees it
            counted = True
            try:
                lines = read_lines(stream)
                first = await anext(lines, None)
                if first is not None and (asked := read_request(first)) is not None:
                    clients.count -= 1  # no client: a request to stop
                    counted = False
                    await stops.answer(stream, *asked, lambda: clients.count, tasks.cancel_scope)
                    return
                clients.greeted()
                asked = read_hello(first) if first is not None else None
                chosen = servers.lowlevel(asked)
                async with stream, message_streams(stream, chain(first if asked is None else None, lines)) as (
                        read, write):
                    await serve_dual_era_loop(chosen, read, write, lifespan_state=state, init_options=options)
            except Exception as exc:  # one session's failure never ends the others
                logger.opt(exception=exc).warning("session_failed")
            finally:
                if counted:
                    clients.closed()

        tasks.start_soon(listener.serve, session)
        tasks.start_soon(stop_on_signal, tasks.cancel_scope)
        tasks.start_soon(stops.watch, replaced, tasks.cancel_scope)
        logger.info("owner_listening pid={} socket={} idle_timeout_s={:g}", os.getpid(), path, idle_timeout)
        await clients.idle_for(idle_timeout)
        logger.info("owner_idle_exit idle_timeout_s={:g} sessions_served={}", idle_timeout, clients.served)
        tasks.cancel_scope.cancel()


async def stop_on_signal(scope: CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            logger.info("owner_signal signal={}", signal.Signals(signum).name)
            scope.cancel()
            return


class Clients:
    """How many sessions are open, and since when none has been."""

    def __init__(self) -> None:
        self.count = 0
        self.served = 0
        self.since = time.monotonic()

    def opened(self) -> None:
        self.count += 1

    def greeted(self) -> None:
        self.served += 1
        logger.info("client_connected clients={}", self.count)

    def closed(self) -> None:
        self.count -= 1
        self.since = time.monotonic()
        logger.info("client_left clients={}", self.count)

    async def idle_for(self, timeout: float) -> None:
        """Return once no client has been connected for ``timeout`` seconds (never for 0)."""
        if timeout <= 0:
            await anyio.sleep_forever()
        while self.count or time.monotonic() - self.since < timeout:
            await anyio.sleep(min(1.0, timeout / 4))


async def chain(first: bytes | None, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first is not None:
        yield first
    async for line in rest:
        yield line


@asynccontextmanager
async def message_streams(stream: ByteStream, lines: AsyncIterator[bytes] | None = None
                          ) -> AsyncIterator[tuple[Any, Any]]:
    """MCP message streams over a byte stream of newline-delimited JSON-RPC, as ``stdio_server`` makes them.

    Symmetric: the owner serves a session over it, and a client (the tests' direct one) can speak over it.
    """
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def reader() -> None:
        async with read_writer:
            async for line in lines if lines is not None else read_lines(stream):
                try:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await stream.send(data.encode() + b"\n")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            tasks.cancel_scope.cancel()


async def read_lines(stream: ByteStream) -> AsyncIterator[bytes]:
    """Non-blank lines (without their newline) until the peer closes; a line past MAX_MESSAGE ends it."""
    buffer = bytearray()
    scan = 0
    while True:
        try:
            chunk = await stream.receive(READ_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", scan)) >= 0:
            line = bytes(buffer[start:end])
            start = scan = end + 1
            if line.strip():
                yield line
        if start:
            del buffer[:start]
        scan = len(buffer)
        if scan > MAX_MESSAGE:
            logger.warning("message_too_large bytes={} limit={}", scan, MAX_MESSAGE)
            return
