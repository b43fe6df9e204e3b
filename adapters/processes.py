"""This machine's processes as run holders (domain/ports/processes.py).

A holder is ``<machine> <pid> <start>``: the machine is the host name and, on Linux, the kernel's boot
id (so a holder from before a reboot is not taken for a live process of the same pid); ``start`` is
when the process started, in clock ticks since boot (``/proc/<pid>/stat``), so a pid the kernel gave
to another process since is not taken for the holder either. Where ``/proc`` is missing (macOS) the
start is ``-`` and only the pid is looked at: a reused pid then reads as alive (the heartbeat decides).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from domain.ports.processes import MAX_HOLDER, Processes

PROC = Path("/proc")
UNKNOWN = "-"


def machine() -> str:
    """This machine since its last boot, without spaces."""
    name = socket.gethostname().replace(" ", "_")[:200] or "localhost"
    try:
        boot = (PROC / "sys/kernel/random/boot_id").read_text("ascii").strip()
    except OSError:
        return name
    return f"{name}/{boot}"


def stat_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` from its 3rd field on (state, ppid, ...), None when unreadable. The command
    name (2nd field) may hold spaces and parentheses: the fields start after its last ')'."""
    try:
        raw = (PROC / str(pid) / "stat").read_text("utf-8", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 1:].split()


def started(pid: int) -> str:
    """When ``pid`` started (clock ticks since boot, the stat file's 22nd field), or UNKNOWN."""
    fields = stat_fields(pid)
    return fields[19] if fields is not None and len(fields) > 19 else UNKNOWN


class LocalProcesses(Processes):
    def __init__(self) -> None:
        self.machine = machine()

    def me(self) -> str:
        pid = os.getpid()  # asked each time: a forked child is its own holder
        return f"{self.machine} {pid} {started(pid)}"[:MAX_HOLDER]

    def gone(self, holder: str) -> bool:
        parts = holder.rsplit(" ", 2)
        if len(parts) != 3 or parts[0] != self.machine or not parts[1].isdigit():
            return False  # another machine (or boot), or not a holder this adapter wrote: cannot tell
        pid, start = int(parts[1]), parts[2]
        if pid <= 0:
            return False
        try:
            os.kill(pid, 0)  # signal 0: only whether the pid exists
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # it exists, as another user's process
        except OSError:
            return False
        fields = stat_fields(pid)
        if fields is None:
            return False
        if fields and fields[0] in ("Z", "X"):  # ended, not yet reaped by its parent
            return True
        return start != UNKNOWN and len(fields) > 19 and fields[19] != start
