"""``memtrove ingest``'s status line from what the server told, on a clock the test moves: the rate counts
chunks embedded in this run only, the ETA is the chunks left (totals once cut, else bytes at the chunks
per byte seen) at that rate and unknown before anything is cut; a terminal gets the line redrawn with
``\\r`` and a line per file, a log a status line at most every PLAIN_EVERY seconds; --quiet nothing."""

from __future__ import annotations

import io

import pytest

from entrypoints.console.progress import PLAIN_EVERY, Progress


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The status line is cut to the terminal's width: these tests read it whole, whatever runs them."""
    monkeypatch.setenv("COLUMNS", "200")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_eta_come_from_chunks_embedded_and_files_that_need_none_leave_the_work() -> None:
    clock = Clock()
    progress = Progress(io.StringIO(), clock=clock)
    progress.start(3, 3_000)
    progress.begin("/n/a.md", 1_000)
    progress.begin("/n/b.md", 1_000)
    clock.now += 2
    assert "0 chunks embedded, 0.0/s, ETA -:--" in progress.status()  # nothing cut yet: no ETA guessed
    progress.advance("/n/a.md", 0, 10)
    progress.advance("/n/a.md", 5, 10)
    # 5 chunks in 2 s; left: a's 5 and 2,000 bytes not cut at 10 chunks per 1,000 bytes = 25 chunks, 10 s.
    assert progress.status() == "0:02 | 0/3 files | 5 chunks embedded, 2.5/s, ETA 0:10 | a.md 5/10, b.md 0/?"
    progress.end("/n/b.md", 1_000, "unchanged /n/b.md")  # needed no embedding: 1,000 bytes less to do
    assert progress.status().endswith("ETA 0:06 | a.md 5/10")
    progress.end("/n/a.md", 1_000, "indexed /n/a.md (10 chunks)", chunks=10)
    assert progress.status() == "0:02 | 2/3 files | 10 chunks embedded, 5.0/s, ETA 0:02"  # c.md: 10 more


def test_a_resumed_file_counts_only_what_this_run_embedded() -> None:
    clock = Clock()
    progress = Progress(io.StringIO(), clock=clock)
    progress.start(1, 100)
    progress.begin("/n/big.md", 100)
    progress.advance("/n/big.md", 300, 400)  # an earlier, killed run embedded 300 already
    clock.now += 10
    progress.advance("/n/big.md", 350, 400)
    assert "50 chunks embedded, 5.0/s, ETA 0:10" in progress.status()
    progress.end("/n/big.md", 100, "indexed /n/big.md (400 chunks)", chunks=400)
    assert "100 chunks embedded" in progress.status()


def test_a_terminal_gets_one_line_redrawn_and_a_line_per_file() -> None:
    clock, out = Clock(), Terminal()
    progress = Progress(out, clock=clock)
    progress.start(2, 2_000)
    progress.begin("/n/a.md", 1_000)
    for done in range(0, 100, 10):
        clock.now += 1
        progress.advance("/n/a.md", done, 100)
        progress.tick()
    progress.returned("/n/a.md")
    progress.end("/n/b.md", 1_000, "skipped /n/b.md: binary")
    progress.tick()
    assert "still indexing: a.md 90/100" in out.getvalue()
    progress.end("/n/a.md", 1_000, "indexed /n/a.md (100 chunks)", chunks=100)
    progress.finish()
    text = out.getvalue()
    assert text.count("\n") == 2 and text.count("\r") >= 12, text
    assert [line.rsplit("\r", 1)[-1] for line in text.split("\n")] == [
        "skipped /n/b.md: binary", "indexed /n/a.md (100 chunks)", ""]


def test_a_log_gets_a_status_line_at_most_every_few_seconds_and_quiet_nothing() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress(out, clock=clock)
    progress.start(1, 1_000)
    progress.begin("/n/a.md", 1_000)
    for _ in range(100):  # 25 s of ticks every 0.25 s
        clock.now += 0.25
        progress.tick()
    lines = out.getvalue().splitlines()
    assert lines[0] == "1 files (1,000 bytes) to read" and len(lines) - 1 == int(25 / PLAIN_EVERY), lines
    assert "\r" not in out.getvalue()

    silent = io.StringIO()
    quiet = Progress(silent, quiet=True, clock=clock)
    quiet.start(1, 1_000)
    quiet.begin("/n/a.md", 1_000)
    quiet.tick()
    quiet.end("/n/a.md", 1_000, "indexed /n/a.md (3 chunks)", chunks=3)
    assert silent.getvalue() == ""


def test_ctrl_c_says_which_files_go_on_in_the_server() -> None:
    out = Terminal()
    progress = Progress(out, quiet=True)  # said even with --quiet: no summary follows
    progress.start(3, 3_000)
    progress.begin("/n/sent.md", 1_000)  # its call had no answer and no progress yet
    progress.begin("/n/told.md", 1_000)
    progress.advance("/n/told.md", 128, 300)
    progress.begin("/n/answered.md", 1_000)
    progress.advance("/n/answered.md", 0, 50)
    progress.returned("/n/answered.md")
    progress.interrupted({"art_1": "/n/answered.md"})
    lines = out.getvalue().splitlines()
    assert lines == [
        "interrupted: /n/sent.md was being sent; if the server got it, it goes on indexing there (the next "
        "memtrove ingest finds it done, or sends it again)",
        "interrupted: /n/told.md goes on indexing in the server (128 of 300 chunks embedded)",
        "interrupted: /n/answered.md goes on indexing in the server (0 of 50 chunks embedded; memtrove show "
        "art_1 tells how far)",
        "(a server that stops finishes what it was indexing when it next starts)"]
