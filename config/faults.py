"""Fault injection for the crash-safety test: MEMTROVE_CRASH_AT=<point> kills the process there."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable


def crash_checkpoint(point: str | None) -> Callable[[str], None]:
    """A checkpoint that SIGKILLs this process when the write path reaches ``point`` (never by default)."""
    if not point:
        return lambda _: None

    def checkpoint(reached: str) -> None:
        if reached == point:
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint
