"""Calls that may outlive their request: progress notifications while the client waits, and a budget.

The work runs in a thread of its own; the tool's thread relays its progress to the client (MCP
progress notifications, when the client sent a progressToken) and stops waiting at the budget.
Past it the work goes on in the background and the tool answers with where it got to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio.from_thread
from loguru import logger

from entrypoints.runtime import Runtime

T = TypeVar("T")
RELAY_EVERY = 0.5  # seconds between progress notifications at most


class Tracker:
    """The ingest's Progress: the latest (artifact, done, total), and whether the caller still waits."""

    def __init__(self) -> None:
        self.detached = False
        self.latest: tuple[str, int, int] | None = None
        self._lock = threading.Lock()

    def __call__(self, artifact_id: str, done: int, total: int) -> None:
        with self._lock:
            self.latest = (artifact_id, done, total)


@dataclass(frozen=True, slots=True)
class StillRunning(Generic[T]):
    """The budget ran out: how far the work got (None before it named its artifact)."""

    latest: tuple[str, int, int] | None


def run_long(runtime: Runtime, ctx: Any, work: Callable[[Tracker], T], budget: float,
             unit: str = "chunks embedded") -> T | StillRunning[T]:
    """``work(tracker)`` in the background; its result if it ends within ``budget`` seconds (progress
    is told the client as "<done> of <total> <unit>"). A caller that shows the progress itself (the page:
    ``ctx.answer_when_known``) is answered as soon as the work's units are known (an ingest's chunks cut,
    so a new document is found by its words), as it would be at the budget."""
    early = getattr(ctx, "answer_when_known", False) is True
    tracker = Tracker()
    future = runtime.in_background(lambda: work(tracker))
    deadline = time.monotonic() + budget
    sent: tuple[str, int, int] | None = None
    while True:
        try:
            return future.result(timeout=max(0.0, min(RELAY_EVERY, deadline - time.monotonic())))
        except FutureTimeout:
            pass
        latest = tracker.latest
        # MCP wants each notification's progress above the last one's; a total of 0 is work not yet cut
        # into its units (an ingest's chunks): nothing to tell until it is.
        if latest is not None and latest[2] and (sent is None or latest[1] > sent[1]) and ctx is not None:
            sent = latest
            _, done, total = latest
            try:
                anyio.from_thread.run(ctx.report_progress, done, total, f"{done} of {total} {unit}")
            except Exception as exc:  # noqa: BLE001 - a client gone away must not stop the work
                logger.debug("progress_not_sent error={}", exc)
        if time.monotonic() >= deadline or (early and latest is not None and latest[2]):
            tracker.detached = True
            if future.done():  # it finished while we looked away
                return future.result()
            return StillRunning(tracker.latest)
