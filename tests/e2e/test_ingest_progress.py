"""``memtrove ingest``'s progress as a person sees it, from real processes: under a pseudo-terminal one
status line redrawn in place (``\\r``) that moves within a file (the calls' progress notifications, over
stdio and over HTTP alike), a line of its own for every file, also for files whose indexing outlived
their call's budget (MEMTROVE_CALL_BUDGET=1 and a slow embedder); without a terminal a bounded number of
plain lines; nothing with --quiet or --json; Ctrl-C says what goes on in the server."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.crash_driver import QuickFakeOpenAIServer
from tests.support.mcp_procs import http_server, memtrove_command, run_cli, server_env, stop_owner

pytestmark = pytest.mark.slow

DIMS = 32
COLUMNS = 160
PROGRESS = re.compile(r"(\S+\.md) (\d+)/(\d+)")  # a file's chunks embedded, on the status line


@pytest.fixture(scope="module")
def fake() -> Iterator[QuickFakeOpenAIServer]:
    with QuickFakeOpenAIServer(default_dimensions=DIMS) as server:
        yield server


@pytest.fixture
def slow(fake: QuickFakeOpenAIServer) -> Iterator[QuickFakeOpenAIServer]:
    fake.document_delay = 0.2  # each request of 16 texts: a file of ~200 chunks takes seconds
    yield fake
    fake.document_delay = 0.0


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    yield data
    stop_owner(data)


def settings(fake: QuickFakeOpenAIServer, budget: float) -> dict[str, str]:
    return {"MEMTROVE_SHARED": "true", "MEMTROVE_IDLE_TIMEOUT": "120", "MEMTROVE_EMBEDDER": "openai-compatible",
            "OPENAI_BASE_URL": fake.base_url, "OPENAI_EMBED_MODEL": "fake", "OPENAI_EMBED_DIMS": str(DIMS),
            "OPENAI_BATCH_SIZE": "16", "MEMTROVE_TOOLSETS": "core,console", "MEMTROVE_CALL_BUDGET": str(budget)}


def folder(root: Path, big: int = 3, small: int = 2) -> list[Path]:
    """``big`` files of a few hundred chunks each and ``small`` one-line notes."""
    root.mkdir(parents=True, exist_ok=True)
    files = []
    for n in range(big):
        text = "\n\n".join(f"Section {i} of part {n}: " + " ".join(f"term{n}x{i}x{j}" for j in range(120))
                           for i in range(100))
        files.append(root / f"part{n}.md")
        files[-1].write_text(text)
    for n in range(small):
        files.append(root / f"note{n}.md")
        files[-1].write_text(f"A short note number {n} about the harbour.\n")
    return [f.resolve() for f in files]


@dataclass
class Run:
    code: int
    stderr: str  # as the terminal got it, "\r\n" read back as "\n"
    stdout: str

    @property
    def lines(self) -> list[str]:
        """The lines that stay on screen: what follows the last carriage return of each."""
        return [part.rsplit("\r", 1)[-1] for part in self.stderr.split("\n")[:-1]]

    @property
    def redraws(self) -> list[str]:
        """Each drawing of the status line in place (a carriage return not ending a line)."""
        drawn = []
        for part in self.stderr.split("\n"):
            drawn += [d.strip() for d in part.split("\r")[1:] if d.strip()]
        return drawn


def terminal_run(args: list[str], data: Path, env: dict[str, str], stop_when: Callable[[str], bool] | None = None,
                 timeout: float = 300.0) -> Run:
    """``memtrove ARGS`` with stderr on a pseudo-terminal ``COLUMNS`` wide (stdout a pipe); SIGINT
    (Ctrl-C) once ``stop_when`` holds for the stderr read so far."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    environ = server_env(data, env)
    environ.pop("COLUMNS", None)  # the terminal's own width, as a person's shell has it
    process = subprocess.Popen([*memtrove_command(), *args], env=environ, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    got, stopped, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer of the terminal is gone
                    break
                if not chunk:
                    break
                got += chunk
            if stop_when is not None and not stopped and stop_when(got.decode("utf-8", "replace")):
                process.send_signal(signal.SIGINT)
                stopped = True
        else:
            raise AssertionError(f"memtrove {' '.join(args)} still running after {timeout} s:\n{got.decode()}")
        assert process.stdout is not None
        stdout = process.stdout.read().decode()
        return Run(process.wait(timeout=60), got.decode("utf-8", "replace").replace("\r\n", "\n"), stdout)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()


def within_file(redraws: list[str]) -> set[str]:
    """Files a redraw showed part-way: some, not all, of their chunks embedded."""
    return {m.group(1) for d in redraws for m in PROGRESS.finditer(d) if 0 < int(m.group(2)) < int(m.group(3))}


def final_lines(run: Run, files: list[Path]) -> dict[str, str]:
    ends = {}
    for line in run.lines:
        for f in files:
            if line.endswith(f" {f}") or f" {f} (" in line or f" {f}: " in line:
                ends[f.name] = line
    return ends


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_terminal_sees_one_line_moving_within_a_file(tmp_path: Path, data_dir: Path,
                                                           slow: QuickFakeOpenAIServer, transport: str) -> None:
    files = folder(tmp_path / "notes")
    env = settings(slow, budget=120)  # every call outlasts its file: what moves is the calls' notifications
    if transport == "http":
        env.pop("MEMTROVE_SHARED")
        with http_server(data_dir, env):
            run = terminal_run(["ingest", str(tmp_path / "notes")], data_dir, env)
    else:
        run = terminal_run(["ingest", str(tmp_path / "notes")], data_dir, env)
    assert run.code == 0, run
    ends = final_lines(run, files)
    assert set(ends) == {f.name for f in files}, run.stderr
    assert all(re.fullmatch(r"indexed \S+ \(\d+ chunks?\)", line) for line in ends.values()), ends
    assert len(run.lines) == len(files), run.lines  # a line per file, nothing else scrolls
    assert len(run.redraws) >= 5, run.stderr
    # Some file was seen part-way through, before its call answered: progress notifications arrived.
    assert within_file(run.redraws) & {f.name for f in files if f.name.startswith("part")}, run.redraws
    assert all(len(d) < COLUMNS for d in run.redraws)
    assert "5 files: 5 new" in run.stdout and "chunks in" in run.stdout, run.stdout


def test_files_outliving_their_call_each_get_their_line_on_a_terminal(tmp_path: Path, data_dir: Path,
                                                                      slow: QuickFakeOpenAIServer) -> None:
    files = folder(tmp_path / "notes")
    run = terminal_run(["ingest", str(tmp_path / "notes")], data_dir, settings(slow, budget=1))
    assert run.code == 0, run
    waiting = [d for d in run.redraws if "still indexing:" in d]
    assert waiting, run.stderr  # the calls answered "indexing": the same line went on with their progress
    ends = final_lines(run, files)
    assert set(ends) == {f.name for f in files}, run.stderr
    big = {f.name: int(re.search(r"\((\d+) chunks\)", ends[f.name]).group(1)) for f in files if f.name.startswith("part")}
    assert all(n > 100 for n in big.values()), ends
    assert len(run.lines) == len(files), run.lines  # no line per poll
    assert "5 files: 5 new" in run.stdout and "still indexing" not in run.stdout, run.stdout


def test_without_a_terminal_lines_are_few_and_quiet_or_json_print_none(tmp_path: Path, data_dir: Path,
                                                                       slow: QuickFakeOpenAIServer) -> None:
    files = folder(tmp_path / "notes")
    env = settings(slow, budget=1)
    started = time.monotonic()
    done = run_cli(["ingest", str(tmp_path / "notes")], data_dir, env, timeout=300)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done
    assert "\r" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"{len(files)} files ({sum(f.stat().st_size for f in files):,} bytes) to read"
    for f in files:
        assert sum(line.startswith("indexed ") and f" {f} (" in line for line in lines) == 1, done.stderr
    status = [line for line in lines[1:] if not line.startswith("indexed ")]
    assert len(status) <= seconds / 5 + 1, done.stderr  # at most one every PLAIN_EVERY seconds
    assert all(re.match(r"\d+:\d\d \| \d+/5 files \| [\d,]+ chunks embedded", s) for s in status), status

    for f in files:
        f.write_text(f.read_text() + "\nAn added line.\n")
    quiet = run_cli(["ingest", "--quiet", str(tmp_path / "notes")], data_dir, env, timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet
    assert "5 replaced" in quiet.stdout, quiet.stdout
    for f in files:
        f.write_text(f.read_text() + "\nAnother line.\n")
    as_json = run_cli(["ingest", "--json", str(tmp_path / "notes")], data_dir, env, timeout=300)
    assert as_json.returncode == 0 and as_json.stderr == "", as_json
    summary = json.loads(as_json.stdout)
    assert (summary["replaced"], summary["indexing"], summary["failed"]) == (5, 0, []), summary


def test_ctrl_c_says_the_server_goes_on_and_it_does(tmp_path: Path, data_dir: Path,
                                                    slow: QuickFakeOpenAIServer) -> None:
    files = folder(tmp_path / "notes", big=3, small=0)
    env = settings(slow, budget=1)
    run = terminal_run(["ingest", str(tmp_path / "notes")], data_dir, env,
                       stop_when=lambda seen: bool(within_file(seen.replace("\r\n", "\n").split("\r"))))
    assert run.code == 130, run
    told = [line for line in run.lines if line.startswith("interrupted: ")]
    assert told and all(" goes on indexing in the server" in line for line in told), run.stderr
    assert any("memtrove show art_" in line for line in told), told  # a call answered "indexing": its id
    assert "Traceback" not in run.stderr and run.stdout == "", run
    going = {Path(line.split()[1]).name for line in told}
    # What the server had goes on: the next run finds it done (unchanged) or joins it, and finishes the rest.
    again = json.loads(run_cli(["ingest", "--json", str(tmp_path / "notes")], data_dir, env, timeout=300).stdout)
    assert again["ingested"] + again["unchanged"] == len(files) and again["failed"] == [], again
    assert again["indexing"] == 0 and going <= {f.name for f in files}
