"""Progress of a long command on stderr: one line redrawn on a terminal (files, chunks, rate, ETA),
plain lines otherwise (one per file), nothing with ``--quiet``."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 100


class Progress:
    def __init__(self, out: TextIO | None = None, quiet: bool = False) -> None:
        self.out = out or sys.stderr
        self.quiet = quiet
        self.live = not quiet and self.out.isatty()
        self.files = self.total_files = self.total_bytes = self.bytes = self.chunks = 0
        self.started = time.perf_counter()

    def start(self, files: int, size: int) -> None:
        self.total_files, self.total_bytes, self.started = files, size, time.perf_counter()
        if not self.quiet and not self.live:
            self._line(f"{files} files ({size:,} bytes) to read")

    def done(self, path: str, status: str, chunks: int, size: int) -> None:
        self.files += 1
        self.chunks += chunks
        self.bytes += size
        if self.quiet:
            return
        if not self.live:
            self._line(f"{status:<10} {path}" + (f" ({chunks} chunks)" if chunks else ""))
            return
        if status.startswith(("skipped", "failed")):
            self.say(f"{status}: {path}")
        self._draw(path)

    def say(self, message: str) -> None:
        if self.quiet:
            return
        if self.live:
            self.out.write("\r" + " " * WIDTH + "\r")
        self._line(message)

    def finish(self) -> None:
        if self.live:
            self.out.write("\r" + " " * WIDTH + "\r")
            self.out.flush()

    def _draw(self, path: str) -> None:
        elapsed = max(time.perf_counter() - self.started, 1e-6)
        rate = self.chunks / elapsed
        left = (self.total_bytes - self.bytes) / (self.bytes / elapsed) if self.bytes else 0.0
        head = (f"[{self.files}/{self.total_files} files] {self.chunks} chunks, {rate:.1f} chunks/s, "
                f"ETA {int(left) // 60}:{int(left) % 60:02d} ")
        tail = path[-(WIDTH - len(head) - 1):] if len(head) < WIDTH - 10 else ""
        self.out.write("\r" + (head + tail).ljust(WIDTH)[:WIDTH])
        self.out.flush()

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
