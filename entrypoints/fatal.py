"""The one line a failed start prints (``memtrove: <reason>``): once per process, whichever thread
fails first (the warm-up thread and the main thread can meet the same refusal at the same moment)."""

from __future__ import annotations

import sys
import threading

_lock = threading.Lock()
_said = threading.Event()


def say_fatal(message: str) -> None:
    with _lock:
        if _said.is_set():
            return
        _said.set()
        print(f"memtrove: {message}", file=sys.stderr, flush=True)
