"""Real memtrove server processes for end-to-end tests: HTTP on a free port, stdio parameters, one-shot CLI runs.

Every helper takes the data directory and extra environment variables explicitly; settings the
developer's shell may carry (MEMTROVE_*, OPENAI_*, MCP_PORT, ...) are never inherited, so a test
sees only what it sets.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from entrypoints.shared import memtrove_command

# Variables memtrove (or its libraries) read; a test must set them itself to have them.
_SETTING_PREFIXES = ("MEMTROVE_", "OPENAI_", "CHROMA_", "CHUNK_", "SINGLE_PIECE_", "MCP_", "LOG_LEVEL")

START_TIMEOUT = 60.0  # seconds until /health must answer (the model and index open on a 2-core box)
STOP_TIMEOUT = 15.0
READ_TIMEOUT = 120.0  # seconds a tool call may take before the client gives up instead of hanging




def server_env(data_dir: Path | str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for a server: the shell's basics, the data dir, warm-up off, not shared, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith(_SETTING_PREFIXES)}
    # In-process stdio unless a test asks for the shared server (a SIGKILL must hit the real server).
    base.update({"MEMTROVE_DATA_DIR": str(data_dir), "MEMTROVE_WARMUP": "false", "MEMTROVE_SHARED": "false",
                 "PYTHONUNBUFFERED": "1"})
    base.update(env or {})
    return base


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------------------- stdio

def stdio_parameters(data_dir: Path | str, env: Mapping[str, str] | None = None) -> Any:
    """``StdioServerParameters`` that start ``memtrove serve`` (stdio) on ``data_dir``."""
    from mcp.client.stdio import StdioServerParameters

    command, *prefix = memtrove_command()
    return StdioServerParameters(command=command, args=[*prefix, "serve"], env=server_env(data_dir, env))


@asynccontextmanager
async def stdio_session(data_dir: Path | str, env: Mapping[str, str] | None = None,
                        stderr_path: Path | None = None, mode: str = "auto") -> AsyncIterator[Any]:
    """A connected MCP ``Client`` over stdio; the server's stderr goes to ``stderr_path`` (or is dropped).

    ``mode="legacy"`` opens with the ``initialize`` handshake (as 2025-era clients do) instead of
    ``server/discover``."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    params = stdio_parameters(data_dir, env)
    target = stderr_path or Path(os.devnull)
    with open(target, "a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=READ_TIMEOUT,
                          mode=mode) as client:
            yield client


# ---------------------------------------------------------------------- the shared server (owner)

def owner_pid(data_dir: Path | str) -> int | None:
    """The pid of the server owning ``data_dir`` (its lock held), else None."""
    from entrypoints.shared import lock_is_held, read_holder

    data = Path(data_dir).resolve()
    if not lock_is_held(data):
        return None
    pid = read_holder(data).get("pid")
    return int(pid) if pid is not None else None


def wait_until_unowned(data_dir: Path | str, timeout: float = STOP_TIMEOUT) -> bool:
    """Wait until no process holds ``data_dir``'s lock; False if one still does after ``timeout``."""
    from entrypoints.shared import lock_is_held

    deadline = time.monotonic() + timeout
    while lock_is_held(Path(data_dir).resolve()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def stop_owner(data_dir: Path | str, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the shared server of ``data_dir`` (SIGKILL if it lingers); a no-op when none runs."""
    pid = owner_pid(data_dir)
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not wait_until_unowned(data_dir, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_until_unowned(data_dir, 5.0)


@asynccontextmanager
async def socket_session(path: Path | str) -> AsyncIterator[Any]:
    """A connected MCP ``Client`` speaking straight to a shared server's Unix socket (no bridge)."""
    import anyio
    from mcp import Client

    from entrypoints.owner import message_streams

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        stream = await anyio.connect_unix(str(path))
        async with stream, message_streams(stream) as streams:
            yield streams

    async with Client(transport(), read_timeout_seconds=READ_TIMEOUT) as client:
        yield client


# ----------------------------------------------------------------------------------------- http

@asynccontextmanager
async def http_session(mcp_url: str, token: str | None = None,
                       headers: Mapping[str, str] | None = None, **options: Any) -> AsyncIterator[Any]:
    """A connected MCP ``Client`` over streamable HTTP, sending ``Authorization: Bearer`` when given a token;
    ``options`` go to the ``Client`` (e.g. list_roots_callback with mode="legacy")."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    timeout = httpx2.Timeout(30.0, read=120.0)
    async with httpx2.AsyncClient(headers=sent, timeout=timeout) as http:
        transport = streamable_http_client(mcp_url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT, **options) as client:
            yield client


@dataclass
class HttpServer:
    """A running ``memtrove serve --transport http`` subprocess."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    stderr_path: Path
    token: str | None = None
    returncode: int | None = field(default=None)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp/"

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then SIGKILL if it does not exit in ``timeout`` seconds; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.returncode = self.process.returncode
        return self.returncode


def _wait_healthy(server: HttpServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"memtrove http server exited with {server.process.returncode} before answering /health;"
                f" stderr:\n{server.stderr()}")
        try:
            response = httpx.get(f"{server.base_url}/health", headers=server.auth_headers(), timeout=5.0)
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx.HTTPError as exc:
            last_error = repr(exc)
        time.sleep(0.2)
    raise TimeoutError(f"/health did not answer 200 within {timeout:.0f}s ({last_error}); stderr:\n{server.stderr()}")


def start_http_server(data_dir: Path | str, env: Mapping[str, str] | None = None, *, host: str = "127.0.0.1",
                      token: str | None = None, stderr_path: Path | None = None,
                      timeout: float = START_TIMEOUT, attempts: int = 3) -> HttpServer:
    """Start the HTTP server on a free port and return once ``GET /health`` answers 200."""
    extra = dict(env or {})
    if token is not None:
        extra["MEMTROVE_HTTP_TOKEN"] = token
    log_path = stderr_path or Path(data_dir).parent / f"{Path(data_dir).name}-http-stderr.log"
    for attempt in range(1, attempts + 1):
        port = free_port()
        log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - the child holds it open
        try:
            process = subprocess.Popen(
                [*memtrove_command(), "serve", "--transport", "http", "--host", host, "--port", str(port)],
                env=server_env(data_dir, extra), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log,
            )
        finally:
            log.close()
        server = HttpServer(process=process, host=host, port=port, stderr_path=log_path, token=token)
        try:
            _wait_healthy(server, timeout)
            return server
        except RuntimeError:
            server.stop()
            # Another process may have taken the port between the probe and the bind: try another.
            if attempt == attempts or "address already in use" not in server.stderr().lower():
                raise
        except BaseException:
            server.stop()
            raise
    raise AssertionError("unreachable")


@contextmanager
def http_server(data_dir: Path | str, env: Mapping[str, str] | None = None, **options: Any) -> Iterator[HttpServer]:
    """``start_http_server`` as a context manager that always terminates the process."""
    server = start_http_server(data_dir, env, **options)
    try:
        yield server
    finally:
        server.stop()


# ------------------------------------------------------------------------------------ one-shot

def run_cli(args: list[str], data_dir: Path | str, env: Mapping[str, str] | None = None,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``memtrove ARGS`` with no stdin and return its exit code, stdout and stderr."""
    return subprocess.run([*memtrove_command(), *args], env=server_env(data_dir, env), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, check=False)


# ------------------------------------------------------------------------ sync driving of a client

class BlockingClient:
    """A connected MCP client living on an event loop in a helper thread, driven from sync tests.

    One connection (one stdio server process, or one HTTP session) can so be shared by every test
    of a module through an ordinary module-scoped fixture.
    """

    def __init__(self, portal: Any, client: Any) -> None:
        self.portal = portal
        self.client = client

    def run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``await function(client, *args, **kwargs)`` on the client's loop and return its result."""
        return self.portal.call(functools.partial(function, self.client, *args, **kwargs))

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.portal.call(self.client.call_tool, tool, arguments or {})


@contextmanager
def blocking(session: Any) -> Iterator[BlockingClient]:
    """Enter an async client context manager (``stdio_session(...)``, ``http_session(...)``) in a portal."""
    from anyio.from_thread import start_blocking_portal

    with start_blocking_portal(backend="asyncio") as portal:
        with portal.wrap_async_context_manager(session) as client:
            yield BlockingClient(portal, client)
