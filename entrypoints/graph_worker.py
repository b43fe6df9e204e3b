"""The background graph's worker thread (domain/graph/follow.py): woken by a write committed here (or
every ``POLL`` seconds, for writes of other processes), it lets writes gather for ``GATHER`` seconds and
reads rounds until the graph is current. Rounds run at a low priority and pause between them, so a burst
of writes is read in pages while the writes themselves keep their pace."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from loguru import logger

from domain.errors import MemtroveError
from domain.graph.follow import FollowGraph, Round

POLL = 5.0  # seconds between looks at the change log when no local write announced work
GATHER = 1.0  # seconds a woken worker lets writes gather: a burst becomes a few pages
PAUSE = 0.05  # seconds between rounds: the GIL is handed to the calls in flight
NICE = 10  # the thread's scheduling priority below the server's calls (Linux: a thread is a task)


def lower_priority() -> None:
    """This thread (not the process) yields the cores to the server's calls: spaCy's parse is CPU work."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
    except (AttributeError, OSError):  # not Linux, or not allowed: the pauses still apply
        pass


def graph_loop(follow: FollowGraph, stop: threading.Event, work: threading.Event,
               timed: Callable[[str, Callable[[], Round], Callable[[Round], bool]], Round]) -> None:
    lower_priority()
    while not stop.is_set():
        if work.wait(POLL):
            stop.wait(GATHER)
        work.clear()
        try:
            while not stop.is_set():
                started = time.perf_counter()
                done = timed("graph_follow", lambda: follow.step(stop.is_set), lambda r: bool(r.read or r.forgotten))
                if done.read or done.forgotten:
                    logger.info("graph_followed changes={} records_read={} forgotten={} errors={} latency_ms={:.0f}",
                                done.changes, done.read, done.forgotten, len(done.errors),
                                (time.perf_counter() - started) * 1000)
                if not done.moved:
                    break
                stop.wait(PAUSE)
        except MemtroveError as exc:  # the cursor did not move: the next round reads it again
            logger.warning("graph_follow_failed error={}", exc.message)
            stop.wait(5.0)
        except Exception as exc:  # noqa: BLE001 - the worker must outlive a bug in one round
            logger.opt(exception=exc).error("graph_follow_crashed")
            stop.wait(5.0)
