"""``memtrove serve`` over stdio with MEMTROVE_SHARED=false, answering before its server is built.

The process serves its one client itself, as before, but its server (the mcp SDK, the container, the
stores: 1-2 s) is built in a thread while the bridge's front (entrypoints/bridge.py) already reads
the client and answers ``initialize``, ``server/discover`` and ``tools/list`` from the answers this
code and these settings gave before (entrypoints/answers.py). The session then runs on that server
over a socket pair, the bridge asking it again what it answered early, exactly as with the shared
server. The server is never restarted: once its session ends, so does the process.
"""

from __future__ import annotations

import socket
import sys
import threading
import traceback
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from entrypoints.launcher import Unavailable

if TYPE_CHECKING:
    from config.settings import Settings
    from entrypoints.start import StartSettings

ENDED = "the memtrove server ended"


def run_local(start: StartSettings, settings: Settings | None = None) -> int:
    """Serve the client on stdin/stdout; ``settings``: already loaded (else loaded by the server's thread)."""
    from entrypoints.answers import Answers
    from entrypoints.bridge import Bridge

    local = LocalServer(start, settings)
    bridge = Bridge(local, Answers(start.answers))  # type: ignore[arg-type]
    try:
        bridge.open()
    except Unavailable as exc:
        print(f"memtrove: {exc}", file=sys.stderr, flush=True)
        return 2
    code = bridge.run()
    local.finish()
    return code


class LocalServer:
    """What the bridge connects to: this process's own server, started in a thread at once."""

    def __init__(self, start: StartSettings, settings: Settings | None) -> None:
        self.toolsets = start.toolsets
        self.answers_key: str | None = start.answers  # this process's settings: its answers may be recorded
        self.settings = settings
        self.ready = threading.Event()
        self.conn: socket.socket | None = None
        self.failure: str | None = None
        self.given = False
        self.thread = threading.Thread(target=self._serve, name="memtrove-local-server", daemon=True)
        self.thread.start()

    def connect(self, wait: bool = True) -> socket.socket | None:
        if self.given:
            raise Unavailable(ENDED)  # one session, one server: no restart in this process
        if not wait and not self.ready.is_set():
            return None
        self.ready.wait()
        if self.failure is not None:
            raise Unavailable(self.failure)
        self.given = True
        return self.conn

    def finish(self, timeout: float = 30.0) -> None:
        """Wait for the server to end its session and close its stores (the client has left)."""
        self.thread.join(timeout)

    def _serve(self) -> None:
        runtime = None
        try:
            from domain.errors import MemtroveError

            try:
                runtime, server = self._build()
            except MemtroveError as exc:
                self.failure = exc.message
                return
            ours, self.conn = socket.socketpair()
        except BaseException as exc:  # noqa: BLE001 - whatever stops the build is the client's answer
            traceback.print_exc()
            self.failure = f"{type(exc).__name__}: {exc}"
            if runtime is not None:
                runtime.shutdown()
            return
        finally:
            self.ready.set()
        try:
            import anyio

            anyio.run(session, server, ours)
            runtime.check_store()  # a mismatch found in the background after the client left is reported here
        finally:
            with suppress(OSError):
                ours.close()
            runtime.shutdown()

    def _build(self) -> tuple[Any, Any]:
        from config.logging import configure_logging
        from config.settings import load_settings
        from entrypoints.mcp.server import build_server
        from entrypoints.runtime import Runtime

        if self.settings is None:
            self.settings = load_settings()
            configure_logging(self.settings.log_level, self.settings.memtrove_log_format)
        runtime = Runtime(self.settings, long_lived=True)
        runtime.start()
        return runtime, build_server(runtime)


async def session(server: Any, sock: socket.socket) -> None:
    """The server's one session over ``sock``, as ``MCPServer.run_stdio_async`` runs it over stdin/stdout."""
    from anyio.abc import SocketStream

    from entrypoints.owner import message_streams

    lowlevel = server._lowlevel_server  # noqa: SLF001
    stream = await SocketStream.from_socket(sock)
    async with stream, message_streams(stream) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
