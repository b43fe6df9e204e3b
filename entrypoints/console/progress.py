"""Progress of a long command on stderr, nothing with ``--quiet`` or ``--json``.

On a terminal: one status line redrawn in place (``\\r``) every TICK seconds, so it keeps moving while a
file is embedded, and a line of its own above it for each file as it ends. Not on a terminal (a log,
a pipe): the same lines for the files, and the status as a plain line at most every PLAIN_EVERY seconds.

The status counts what the server says it did, never a guess: chunks embedded in this run (from the
calls' progress notifications, and ``artifact_get`` for files still indexing after their call returned),
their rate since the start, and an ETA of the chunks left at that rate. The chunks left are the files'
own totals once the server has cut them, and for files not cut yet their bytes at the chunks per byte of
those that were (so no ETA before the first file is cut). Files that needed no embedding (unchanged,
skipped) leave the work to do.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TextIO

import anyio

TICK = 0.5  # seconds between redraws of the status line on a terminal
PLAIN_EVERY = 5.0  # seconds between status lines when stderr is not a terminal
SHOWN_FILES = 3  # files in progress named on the status line


@dataclass
class _File:
    size: int
    done: int = 0
    total: int = 0
    first: int | None = None  # done at its first report: what an earlier (killed) run embedded already
    returned: bool = False  # its call answered; the server goes on indexing it

    @property
    def embedded(self) -> int:
        return self.done - (self.first or 0)


class Progress:
    def __init__(self, out: TextIO | None = None, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out or sys.stderr
        self.quiet = quiet
        self.live = not quiet and _is_terminal(self.out)
        self.clock = clock
        self.total_files = self.ended = self.work_bytes = 0
        self.ended_chunks = 0  # chunks embedded in this run by files that ended
        self.cut_bytes = self.cut_chunks = 0  # ended files that were cut: their bytes and chunks
        self.files: dict[str, _File] = {}  # in progress: sent, or still indexing in the server
        self.started = self.plain_at = clock()
        self.drawn = 0  # width of the status line on the terminal now (0: none drawn)

    # -- what the command tells

    def start(self, files: int, size: int) -> None:
        self.total_files, self.work_bytes = files, size
        self.started = self.plain_at = self.clock()
        if not self.quiet and not self.live:
            self._line(f"{files} files ({size:,} bytes) to read")

    def begin(self, path: str, size: int) -> None:
        """A file's call starts."""
        self.files[path] = _File(size)

    def advance(self, path: str, done: int, total: int) -> None:
        """How far the server got with a file (``done`` of ``total`` chunks embedded)."""
        file = self.files.get(path)
        if file is None or total <= 0:
            return
        if file.first is None:
            file.first = done
        file.done, file.total = max(file.done, done), total

    def returned(self, path: str) -> None:
        """A file's call answered that the server goes on indexing it."""
        if path in self.files:
            self.files[path].returned = True

    def end(self, path: str, size: int, line: str, chunks: int = 0) -> None:
        """A file is done with (``chunks``: how many it has, 0 when it needed no embedding): its line."""
        file = self.files.pop(path, None) or _File(size)
        self.ended += 1
        if chunks:
            file.done, file.total = max(file.done, chunks), chunks
            self.cut_bytes, self.cut_chunks = self.cut_bytes + file.size, self.cut_chunks + chunks
        else:
            self.work_bytes -= file.size  # nothing (more) to embed: not work to wait for
        self.ended_chunks += file.embedded  # a file that failed half-way was embedded that far all the same
        self.say(line)

    def say(self, message: str) -> None:
        if self.quiet:
            return
        self._clear()
        self._line(message)
        self.tick(force=True)

    def finish(self) -> None:
        self._clear()

    def interrupted(self, indexing: dict[str, str]) -> None:
        """Ctrl-C: what becomes of the files in progress (``indexing``: artifact id -> path of those whose
        call answered). Said even with --quiet: no summary follows."""
        self._clear()
        ids = {path: artifact_id for artifact_id, path in indexing.items()}
        going = 0
        for path, file in self.files.items():
            if path in ids or file.first is not None:  # the server has it: it told its progress
                going += 1
                got = [f"{file.done} of {file.total} chunks embedded"] if file.total else []
                look = [f"memtrove show {ids[path]} tells how far"] if path in ids else []
                self._line(f"interrupted: {path} goes on indexing in the server"
                           + (f" ({'; '.join(got + look)})" if got or look else ""))
            else:
                self._line(f"interrupted: {path} was being sent; if the server got it, it goes on indexing "
                           "there (the next memtrove ingest finds it done, or sends it again)")
        if going:
            self._line("(a server that stops finishes what it was indexing when it next starts)")
        self.files.clear()
        self.quiet = True  # nothing more drawn

    async def ticking(self) -> None:
        """Keep the status moving until cancelled."""
        while True:
            await anyio.sleep(TICK)
            self.tick()

    def tick(self, force: bool = False) -> None:
        if self.quiet or not self.total_files:
            return
        if self.live:
            self._draw()
        elif not force and self.files and self.clock() - self.plain_at >= PLAIN_EVERY:
            self.plain_at = self.clock()
            self._line(self.status())

    # -- what is shown

    def status(self) -> str:
        now = self.clock()
        elapsed = max(now - self.started, 1e-6)
        embedded = self.ended_chunks + sum(f.embedded for f in self.files.values())
        rate = embedded / elapsed
        left = self._left(rate)
        text = (f"{_clock(elapsed)} | {self.ended}/{self.total_files} files | {embedded:,} chunks embedded, "
                f"{rate:.1f}/s, ETA {'-:--' if left is None else _clock(math.ceil(left))}")
        if self.files:
            waiting = all(f.returned for f in self.files.values()) and self.ended + len(self.files) >= self.total_files
            shown = ", ".join(f"{PurePath(p).name} {f.done}/{f.total or '?'}"
                              for p, f in list(self.files.items())[:SHOWN_FILES])
            more = f" and {len(self.files) - SHOWN_FILES} more" if len(self.files) > SHOWN_FILES else ""
            text += f" | {'still indexing: ' if waiting else ''}{shown}{more}"
        return text

    def _left(self, rate: float) -> float | None:
        """Seconds left: the chunks still to embed at ``rate``; None while either is unknown."""
        cut = [f for f in self.files.values() if f.total]
        known_bytes = self.cut_bytes + sum(f.size for f in cut)
        known_chunks = self.cut_chunks + sum(f.total for f in cut)
        left = sum(f.total - f.done for f in cut)
        uncut = max(0, self.work_bytes - known_bytes)
        if uncut and not known_bytes or not rate:
            return None
        if uncut:
            left += uncut * known_chunks / known_bytes
        return left / rate

    def _draw(self) -> None:
        width = max(20, _columns(self.out) - 1)
        text = self.status()[:width]
        self.out.write("\r" + text + " " * max(0, self.drawn - len(text)))
        self.out.flush()
        self.drawn = len(text)

    def _clear(self) -> None:
        if self.live and self.drawn:
            self.out.write("\r" + " " * self.drawn + "\r")
            self.out.flush()
            self.drawn = 0

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: plain lines
        return False


def _columns(out: TextIO) -> int:
    """The width of the terminal ``out`` writes to (COLUMNS when set, as for shutil)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(out.fileno()).columns or 100
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size((100, 24)).columns


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"
