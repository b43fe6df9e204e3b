"""How a command of the ``memtrove`` command line reaches the store: as an MCP client of the data dir's
server, like any agent, so a running server sees each change at once and one set of rules applies.

- A data dir served over HTTP (its lock names the URL): that URL, with ``MEMTROVE_TOKEN`` (a token of
  ``memtrove token create``) or else the shared ``MEMTROVE_HTTP_TOKEN`` as the bearer token when set.
- Shared stdio (the default): the data dir's owner over its Unix socket, started when none runs
  (entrypoints/launcher.py, as a bridge does); it exits by itself once idle.
- Otherwise (MEMTROVE_SHARED=false, or stores elsewhere): ``memtrove serve`` in a child process,
  which opens the store itself.
A command's connection asks for the core and console toolsets, whatever MEMTROVE_TOOLSETS says (an
HTTP server serves every connection its own: there, a command whose tool it lacks says so).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from config.settings import Settings
from domain.errors import MemtroveError, ValidationError
from entrypoints.shared import data_dir_of, embedder_label, lock_is_held, memtrove_command, read_holder, uses_data_dir

TOOLSETS = ("core", "console")
READ_TIMEOUT = 3600.0  # a long ingest answers when done (or says it goes on indexing)


class CommandFailed(MemtroveError):
    """A tool answered with an error: its message (and the field, for bad input)."""


@asynccontextmanager
async def connected(settings: Settings) -> AsyncIterator[Any]:
    """A connected MCP ``Client`` to the data dir's server."""
    from mcp import Client

    data_dir = data_dir_of(settings)
    holder = read_holder(data_dir) if uses_data_dir(settings) and lock_is_held(data_dir) else {}
    if holder.get("kind") == "http" and holder.get("url"):
        shared = settings.memtrove_http_token.get_secret_value() if settings.memtrove_http_token else None
        token = os.environ.get("MEMTROVE_TOKEN") or shared
        entered = False
        try:
            async with _http(str(holder["url"]), token) as client:
                entered = True
                yield client
        except Exception as exc:  # noqa: BLE001 - the handshake's failure, said plainly; the rest as it is
            if entered and _ours(exc):
                raise
            if entered:
                raise CommandFailed(f"the data dir {data_dir}'s server at {holder['url']} stopped answering "
                                    f"({_reason(exc)})") from None
            hint = "the token was refused?" if token else "it may need a token: set MEMTROVE_TOKEN"
            raise CommandFailed(f"the data dir {data_dir} is served over HTTP at {holder['url']}, which did not "
                                f"accept this connection ({_reason(exc)}); {hint}") from None
        return
    if settings.memtrove_shared and uses_data_dir(settings):
        async with _lost(f"the data dir {data_dir}'s server"), \
                Client(_socket(settings), read_timeout_seconds=READ_TIMEOUT) as client:
            yield client
        return
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, *prefix = memtrove_command()
    env = {**os.environ, "MEMTROVE_TOOLSETS": ",".join(TOOLSETS)}
    params = StdioServerParameters(command=command, args=[*prefix, "serve"], env=env)
    with open(os.devnull, "w", encoding="utf-8") as quiet:
        async with _lost("the memtrove server this command started"), \
                Client(stdio_client(params, errlog=quiet), read_timeout_seconds=READ_TIMEOUT) as client:
            yield client


@asynccontextmanager
async def _lost(server: str) -> AsyncIterator[None]:
    """A connection that broke under a command (the server killed, gone) said as one line, not a
    traceback: the command's own errors pass as they are."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - task groups wrap what broke; a MemtroveError inside is the command's
        if _ours(exc):
            raise
        raise CommandFailed(f"{server} stopped answering ({_reason(exc)})") from None


def _ours(exc: BaseException) -> bool:
    """Whether ``exc`` is (or holds) a command's own MemtroveError."""
    if isinstance(exc, MemtroveError):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_ours(inner) for inner in exc.exceptions)


@asynccontextmanager
async def _socket(settings: Settings) -> AsyncIterator[Any]:
    from anyio.abc import UNIXSocketStream

    from entrypoints.launcher import OwnerLauncher, Unavailable
    from entrypoints.owner import message_streams

    launcher = OwnerLauncher(data_dir_of(settings), embedder_label(settings), TOOLSETS)
    try:
        sock = await anyio.to_thread.run_sync(launcher.connect)  # started when none runs; the hello sent
    except Unavailable as exc:
        raise CommandFailed(str(exc)) from None
    sock.setblocking(False)
    stream = await UNIXSocketStream.from_socket(sock)
    async with stream, message_streams(stream) as streams:
        yield streams


@asynccontextmanager
async def _http(url: str, token: str | None) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=READ_TIMEOUT)) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=READ_TIMEOUT) as client:
            yield client


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (task groups wrap the one that counts)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


async def answer(client: Any, tool: str, *, progress_callback: Any = None,
                 **arguments: Any) -> tuple[dict[str, Any], str]:
    """The tool's structured answer and its text; its error raised as CommandFailed (ValidationError,
    naming the field, for bad input). Arguments left as None are not sent. ``progress_callback`` (awaited
    with progress, total, message) hears the call's progress notifications, over stdio and HTTP alike."""
    try:
        result = await client.call_tool(tool, {k: v for k, v in arguments.items() if v is not None},
                                        progress_callback=progress_callback)
    except MemtroveError:
        raise
    except Exception as exc:  # noqa: BLE001 - the connection broke under the call: said, not a traceback
        raise CommandFailed(f"the server stopped answering {tool} ({_reason(exc)})") from None
    structured = result.structured_content or {}
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        text = text.removeprefix("Error: ")
        if text == f"Unknown tool: {tool}":  # an HTTP server serves its own toolsets to every connection
            raise CommandFailed(f"the data dir's server does not offer {tool}: start it with MEMTROVE_TOOLSETS "
                                f"naming {', '.join(TOOLSETS)} (or all)")
        detail = structured.get("error") if isinstance(structured.get("error"), dict) else structured
        field = detail.get("field") if isinstance(detail, dict) else None
        raise ValidationError(str(field), text) if field else CommandFailed(text)
    return structured, text


async def call(client: Any, tool: str, *, progress_callback: Any = None, **arguments: Any) -> dict[str, Any]:
    return (await answer(client, tool, progress_callback=progress_callback, **arguments))[0]
