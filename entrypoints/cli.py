"""The ``memtrove`` command: ``memtrove serve [--transport stdio|http] [--host H] [--port P]``, ``memtrove doctor
[--rebuild-vectors]``, ``memtrove token create|list|revoke`` (entrypoints/tokens.py), ``memtrove ui`` (the page: entrypoints/web/),
``memtrove stop [--data-dir D] [--force]`` (entrypoints/stop.py), and the commands for
people, ``memtrove ingest|search|list|show|delete|stats`` (entrypoints/console/).
Benchmarks are another command, ``memtrove-bench`` (bench/cli.py).

``memtrove serve`` over stdio is, by default (MEMTROVE_SHARED), a bridge to the one server that owns
the data dir (entrypoints/bridge.py), started on demand as the hidden ``memtrove serve --owner``
(entrypoints/owner.py); MEMTROVE_SHARED=false serves in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from domain.errors import ConfigurationError, MemtroveError
from entrypoints.fatal import say_fatal

if TYPE_CHECKING:
    from config.settings import Settings


def parser(serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line; ``serve_only``: the ``serve`` command alone (a stdio start loads no other command)."""
    root = argparse.ArgumentParser(prog="memtrove", description="memtrove: a memory server for AI agents (MCP).")
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--transport", choices=["stdio", "http"], default=None,
                       help="stdio (default, or MEMTROVE_TRANSPORT) or streamable HTTP at /mcp/")
    serve.add_argument("--host", default=None, help="HTTP bind address (default MEMTROVE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="HTTP port (default MCP_PORT or 3000)")
    serve.add_argument("--owner", action="store_true", help=argparse.SUPPRESS)  # the shared server, run by a bridge
    doctor = commands.add_parser("doctor", help="check that the vector index holds what the store holds")
    doctor.add_argument("--rebuild-vectors", action="store_true",
                        help="rebuild the vector index from the vectors kept in the store (no re-embedding)")
    if serve_only:
        return root
    from entrypoints.console.commands import add_parsers
    from entrypoints.stop import add_parser as add_stop_parser
    from entrypoints.tokens import add_parser
    from entrypoints.web.launch import add_parser as add_ui_parser

    add_parser(commands)
    add_ui_parser(commands)
    add_stop_parser(commands)
    add_parsers(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["serve"] and (code := quick_serve(parser(serve_only=True).parse_args(argv))) is not None:
            return code
    except KeyboardInterrupt:
        return 130
    args = parser().parse_args(argv)
    try:
        from config.logging import configure_logging
        from config.settings import load_settings
        from entrypoints.console.commands import COMMANDS

        settings = load_settings()
        quiet = args.command in COMMANDS and "LOG_LEVEL" not in os.environ  # a person's command: warnings only
        configure_logging("WARNING" if quiet else settings.log_level, settings.memtrove_log_format)
        if args.command == "doctor":
            from entrypoints.doctor import run_doctor

            return run_doctor(settings, args.rebuild_vectors)
        if args.command in COMMANDS:
            from entrypoints.console.commands import run_command

            return run_command(settings, args)
        if args.command == "ui":
            from entrypoints.web.launch import run_ui

            return run_ui(settings, args)
        if args.command == "stop":
            from entrypoints.stop import run_stop

            return run_stop(settings, args)
        if args.command == "token":
            from entrypoints.tokens import run_token

            return run_token(settings, args)
        if args.command == "serve":
            transport = args.transport or settings.memtrove_transport
            if args.owner:
                from entrypoints.owner import run_owner

                return run_owner(settings)
            if transport == "stdio":
                from entrypoints.start import remember

                start = remember(settings)  # the next stdio start reads these instead of loading the settings
                hint_on_terminal()
                if settings.memtrove_shared:
                    from entrypoints.bridge import run_bridge

                    return run_bridge(start)
                from entrypoints.local import run_local

                return run_local(start, settings)
            return serve(settings, transport,
                         args.host or settings.memtrove_host,
                         settings.mcp_port if args.port is None else args.port)
    except (ConfigurationError, MemtroveError) as exc:
        say_fatal(exc.message)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def quick_serve(args: argparse.Namespace) -> int | None:
    """``memtrove serve`` over stdio with the start settings an earlier start remembered for this
    environment (entrypoints/start.py), without loading the settings; None: not such a start."""
    if args.owner or args.transport == "http":
        return None
    from entrypoints.start import recall

    start = recall()
    if start is None or (args.transport or start.transport) != "stdio":
        return None
    from entrypoints.lazylog import logger

    logger.defer(start.log_level, start.log_format)
    hint_on_terminal()
    if start.shared:
        from entrypoints.bridge import run_bridge

        return run_bridge(start)
    from entrypoints.local import run_local

    return run_local(start)


def hint_on_terminal() -> None:
    """A person who ran ``memtrove serve`` (or ./scripts/serve) in a terminal is told, on stderr, what it
    waits for; stdout carries MCP only. A client starts it with pipes, and sees nothing of this."""
    if not os.isatty(0):
        return
    from entrypoints.shared import memtrove_command

    command = " ".join(memtrove_command())
    print(f"memtrove: serving MCP on stdin/stdout: this waits for an MCP client, not for typing. Connect one "
          f"(README \"Connect a client\"; Claude Code: claude mcp add memtrove -- {command} serve), or browse the "
          f"store with `{command} ui`. Ctrl-D or Ctrl-C quits.", file=sys.stderr, flush=True)


def serve(settings: Settings, transport: str, host: str, port: int,
          announce: Callable[[], None] | None = None) -> int:
    """Serve HTTP in this process (it owns the data dir as a shared server does, taken over from an idle
    shared server); stdio is served by the bridge or, with MEMTROVE_SHARED=false, by entrypoints/local.py.
    ``announce``: called once the data dir is this process's."""
    from loguru import logger

    from entrypoints.mcp.server import build_server
    from entrypoints.runtime import Runtime
    from entrypoints.shared import data_dir_of, holding, uses_data_dir

    held = contextlib.ExitStack()
    if transport == "http":
        settings.check_serving(host)
        if uses_data_dir(settings):  # refused while another server owns the data dir
            held.enter_context(holding(data_dir_of(settings), {"kind": "http", "url": f"http://{host}:{port}/mcp/"}))
    with held:
        if announce is not None:
            announce()
        runtime = Runtime(settings, long_lived=True)
        runtime.start()
        server = build_server(runtime)
        try:
            runtime.check_store()
            import uvicorn

            from entrypoints.http import build_http_app

            app = build_http_app(server, runtime, host)
            logger.info("serving transport=http url=http://{}:{}/mcp", host, port)
            # uvicorn finishes the requests in flight on SIGTERM, then raises the signal again: by default
            # that kills the process before the stores are closed. Here it ends the call instead.
            previous = signal.signal(signal.SIGTERM, _terminated)
            try:
                uvicorn.run(app, host=host, port=port, log_config=None, log_level="warning", access_log=False)
            except Terminated:
                logger.info("http_stopped signal=SIGTERM")
            finally:
                signal.signal(signal.SIGTERM, previous)
        finally:
            runtime.shutdown()
    return 0


class Terminated(Exception):
    """SIGTERM, once uvicorn has finished the requests in flight."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated
