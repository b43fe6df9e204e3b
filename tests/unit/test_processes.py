"""adapters/processes.py: a run's holder names this process; a holder whose process ended (exited,
killed, a zombie not yet reaped, or its pid now another process's) is gone; one from another machine,
or not a holder at all, cannot be told gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from adapters.processes import LocalProcesses, started

LINUX = os.path.exists("/proc/self/stat")


def test_this_process_and_its_parent_are_alive() -> None:
    processes = LocalProcesses()
    me = processes.me()
    assert me.split(" ")[-2] == str(os.getpid()) and not processes.gone(me)
    machine = me.rsplit(" ", 2)[0]
    assert not processes.gone(f"{machine} {os.getppid()} {started(os.getppid())}")


def test_an_ended_process_is_gone_reaped_or_not() -> None:
    processes = LocalProcesses()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    holder = f"{processes.machine} {child.pid} {started(child.pid)}"
    assert not processes.gone(holder)
    child.send_signal(signal.SIGKILL)
    if LINUX:  # killed, not yet reaped (a zombie): gone already
        for _ in range(2_000):  # the signal is delivered asynchronously
            if processes.gone(holder):
                break
            time.sleep(0.01)
        assert processes.gone(holder)
    child.wait()
    assert processes.gone(holder)


@pytest.mark.skipif(not LINUX, reason="process start times come from /proc")
def test_a_pid_given_to_another_process_is_not_the_holder() -> None:
    processes = LocalProcesses()
    assert processes.gone(f"{processes.machine} {os.getpid()} 1")  # this pid, but another start: an older process


def test_what_cannot_be_told_is_not_gone() -> None:
    processes = LocalProcesses()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    for holder in ("", "garbage", f"another-host/boot {child.pid} 1", f"{processes.machine} 0 -",
                   f"{processes.machine} -1 -", f"{processes.machine} x 1"):
        assert not processes.gone(holder), holder
