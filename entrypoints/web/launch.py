"""``memtrove ui``: the page of this data dir in a browser. When an HTTP server already serves the data
dir, its page is opened; otherwise one is started here on loopback (the page at /ui, MCP at /mcp) and
runs until Ctrl-C, as ``memtrove serve --transport http`` would."""

from __future__ import annotations

import argparse
import threading
import webbrowser

from config.settings import Settings
from domain.errors import ConfigurationError
from entrypoints.shared import data_dir_of, lock_is_held, read_holder, uses_data_dir


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
    if holder:
        raise ConfigurationError(f"the data dir {data_dir} is held by a server without HTTP (pid {holder.get('pid')}, "
                                 f"{holder.get('kind')}): the page needs an HTTP server. Stop that server (its MCP "
                                 "clients start it again on demand) and run memtrove ui, or run memtrove serve "
                                 "--transport http in its place")
    from entrypoints.cli import serve

    port = settings.mcp_port if args.port is None else args.port
    _show(f"http://127.0.0.1:{port}/ui/", args.no_browser, now=False)
    return serve(settings, "http", "127.0.0.1", port)


def _show(url: str, quiet: bool, now: bool) -> None:
    print(f"memtrove: the page is at {url}", flush=True)
    if quiet:
        return
    if now:
        webbrowser.open(url)
    else:  # once the server it waits for is likely up
        threading.Timer(2.0, webbrowser.open, (url,)).start()
