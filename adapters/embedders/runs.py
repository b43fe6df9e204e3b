"""How a local model's work is cut into calls and spread over the cores: what both local models share.

Measured on this 2-core machine (MiniLM int8, pieces of ~250 word pieces): one thread per call and a
call per core beat one call using both cores' threads, and a call of 1-4 long pieces embeds as many
pieces a second as one of 32 (padding and the arena's growth cost more than a batch saves); short
texts (memories, turns, queries) still gain from sharing a call. So calls are cut by padded tokens,
not by count, and a document's calls run on ``workers`` threads at once, shared by every caller.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

CALL_TOKENS = 1024  # padded tokens a call: 4 pieces of 256, 32 texts of 32
MAX_CALL_TEXTS = 64
SHORT_TEXT = 512  # characters: one call of texts no longer than this runs on its caller's thread


def light(texts: Sequence[str], calls: int) -> bool:
    """Whether a request is a memory or a turn (one call of short texts), which runs on its caller's
    thread rather than waiting behind the documents' calls on the workers."""
    return calls == 1 and max(len(t) for t in texts) <= SHORT_TEXT


def default_workers() -> int:
    """One model call per core this process may use, at most 4 (beyond that memory grows, speed not)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def token_batches(lengths: Sequence[int], budget: int = CALL_TOKENS, most: int = MAX_CALL_TEXTS) -> list[list[int]]:
    """Indexes of ``lengths`` grouped into calls, shortest first, each padded to its longest within
    ``budget`` tokens (a text longer than the budget runs alone)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted: i is the longest so far, so the call would be padded to lengths[i]
        if current and ((len(current) + 1) * max(lengths[i], 1) > budget or len(current) >= most):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def distinct(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """The texts once each, and where each of ``texts`` is among them: the same text is embedded once."""
    where: dict[str, int] = {}
    slots = [where.setdefault(t, len(where)) for t in texts]
    return list(where), slots


class Workers:
    """A fixed set of threads for a model's long calls, shared by every caller: at most ``count`` such
    calls run at once (each holds its activations), in the order they were asked for."""

    def __init__(self, count: int, name: str) -> None:
        self.count = max(1, count)
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def map(self, run: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``run`` on each item on the workers; the results in order, or the first failure raised
        (the calls not yet started are dropped)."""
        pool = self._started()
        futures: list[Future[R]] = [pool.submit(run, item) for item in items]
        try:
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()

    def _started(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.count, thread_name_prefix=self._name)
        return self._pool
