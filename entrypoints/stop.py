"""``memtrove stop [--data-dir DIR] [--force]``: stop the server that holds the data dir, and say what was done.

The shared server (started by a client or a command) is asked over its socket and stops cleanly
(entrypoints/handover.py); while clients are connected it is left running unless ``--force``. An HTTP
server (``memtrove serve --transport http``, ``memtrove ui``) cannot tell whether clients use it, so it
is stopped (SIGTERM: requests in flight finish) only with ``--force``. ``memtrove doctor`` is never
interrupted. Exit status 0 when no server runs any more (stopped, or none ran), 1 when refused or failed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from config.settings import Settings
from entrypoints.shared import can_hand_over, data_dir_of, lock_is_held, log_path, read_holder, socket_path

WAIT = 60.0  # seconds for a server starting to listen, or a signalled one to let go of the data dir
POLL = 0.05


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    stop = commands.add_parser("stop", help="stop the server of this data dir (refused while clients are "
                                            "connected, unless --force)",
                               description="Stop the memtrove server that holds the data dir: the shared server "
                                           "clients start on demand (stopped cleanly; while clients are connected "
                                           "only with --force, and their next call starts it again), or an HTTP "
                                           "server (only with --force).")
    stop.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                      help="the data dir (default MEMTROVE_DATA_DIR, else the user data directory)")
    stop.add_argument("--force", action="store_true",
                      help="stop it even while clients are connected (their calls in flight finish first)")


def run_stop(settings: Settings, args: argparse.Namespace) -> int:
    data_dir = args.data_dir.expanduser().resolve() if args.data_dir is not None else data_dir_of(settings)
    deadline = time.monotonic() + WAIT
    while True:
        if not lock_is_held(data_dir):
            print(f"no memtrove server holds the data dir {data_dir}")
            return 0
        holder = read_holder(data_dir)
        if can_hand_over(holder):
            done = _ask(data_dir, holder, args.force)
            if done is not None:
                return done
        elif holder.get("kind") in ("http", "stdio"):  # an HTTP server, or a shared one of an older memtrove
            return _signal(data_dir, holder, args.force)
        elif holder:
            return _refuse(f"the data dir {data_dir} is in use by memtrove {holder.get('kind')} (pid "
                           f"{holder.get('pid', '?')}): let it finish")
        if time.monotonic() > deadline:
            return _refuse(f"the memtrove server of {data_dir} (pid {holder.get('pid', '?')}) did not answer within "
                           f"{WAIT:.0f} s; see {log_path(data_dir)}")
        time.sleep(POLL)  # starting (not listening yet) or stopping already: look again


def _ask(data_dir: Path, holder: dict[str, Any], force: bool) -> int | None:
    from entrypoints.handover import StopFailed, ask_to_stop

    try:
        outcome = ask_to_stop(str(holder.get("socket") or socket_path(data_dir)), force, hand_over=False,
                              log=str(log_path(data_dir)))
    except StopFailed as exc:
        return _refuse(str(exc))
    if outcome is None:
        return None
    many = f"{outcome.clients} client{'s' if outcome.clients != 1 else ''}"
    if outcome.refused:
        return _refuse(f"the memtrove server pid {outcome.pid} of {data_dir} has {many} connected, so it was left "
                       "running: close them, or `memtrove stop --force` (their calls in flight finish first; "
                       "a client's next call starts it again)")
    cut = (f"; {many} {'was' if outcome.clients == 1 else 'were'} disconnected (a client's next call starts it "
           "again)") if outcome.clients else ""
    print(f"stopped the memtrove server pid {outcome.pid} of the data dir {data_dir}{cut}")
    return 0


def _signal(data_dir: Path, holder: dict[str, Any], force: bool) -> int:
    pid, url = holder.get("pid"), holder.get("url")
    where = f"served over HTTP by memtrove pid {pid} ({url})" if holder.get("kind") == "http" else (
        f"served by an older memtrove server, pid {pid}, which cannot say whether clients are connected")
    if not force:
        return _refuse(f"the data dir {data_dir} is {where}: stop it where it runs (Ctrl-C), or `memtrove stop "
                       "--force` to send it SIGTERM (its requests in flight finish first)")
    if not isinstance(pid, int):
        return _refuse(f"the data dir {data_dir} is {where}, but its lock names no pid")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # gone meanwhile
    except PermissionError:
        return _refuse(f"the data dir {data_dir} is {where}, a process this user may not stop")
    deadline = time.monotonic() + WAIT
    while lock_is_held(data_dir):
        if time.monotonic() > deadline:
            return _refuse(f"memtrove pid {pid} still holds the data dir {data_dir} {WAIT:.0f} s after SIGTERM")
        time.sleep(POLL)
    print(f"stopped the memtrove server pid {pid} of the data dir {data_dir}")
    return 0


def _refuse(message: str) -> int:
    print(f"memtrove: {message}", file=sys.stderr, flush=True)
    return 1
