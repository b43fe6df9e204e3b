"""``memtrove ui``: the page of this data dir in a browser. When an HTTP server already serves the data
dir, its page is opened; otherwise one is started here on loopback (the page at /ui, MCP at /mcp) and
runs until Ctrl-C, as ``memtrove serve --transport http`` would (taking the data dir over from a shared
server with no client connected)."""

from __future__ import annotations

import argparse
import threading
import webbrowser

from config.settings import Settings
from domain.errors import ConfigurationError
from entrypoints.shared import (DataDirBusy, can_hand_over, data_dir_of, describe, lock_is_held, read_holder,
                                uses_data_dir)


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ui = commands.add_parser("ui", help="open the web page of this data dir (starting an HTTP server on loopback)")
    ui.add_argument("--port", type=int, default=None, help="port of the server started here (default MCP_PORT or 3000)")
    ui.add_argument("--no-browser", action="store_true", help="print the address; do not open a browser")


def run_ui(settings: Settings, args: argparse.Namespace) -> int:
    data_dir = data_dir_of(settings)
    holder = read_holder(data_dir) if uses_data_dir(settings) and lock_is_held(data_dir) else {}
    if holder.get("kind") == "http" and holder.get("url"):
        url = str(holder["url"]).rstrip("/").removesuffix("/mcp") + "/ui/"
        _show(url, args.no_browser, now=True)
        return 0
    if holder and not can_hand_over(holder):  # a doctor at work, or an older shared server
        raise ConfigurationError(f"the page needs an HTTP server, and {describe(data_dir, holder)}")
    from entrypoints.cli import serve

    port = settings.mcp_port if args.port is None else args.port
    try:  # an idle shared server hands the data dir over; one with clients is named, with how to stop it
        return serve(settings, "http", "127.0.0.1", port,
                     announce=lambda: _show(f"http://127.0.0.1:{port}/ui/", args.no_browser, now=False))
    except DataDirBusy as exc:
        raise ConfigurationError(f"the page needs an HTTP server, and {exc.message}") from None


def _show(url: str, quiet: bool, now: bool) -> None:
    print(f"memtrove: the page is at {url}", flush=True)
    if quiet:
        return
    if now:
        webbrowser.open(url)
    else:  # once the server it waits for is likely up
        threading.Timer(2.0, webbrowser.open, (url,)).start()
