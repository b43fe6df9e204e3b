"""Which process holds a long run (a codebase's indexing; a graph build can use the same), and whether
a recorded holder's process has ended.

A run records ``Processes.me()`` beside its heartbeat. A later process asks ``gone(holder)``: True
only when it is sure the holder's process has ended (it runs on this machine and the pid is free, a
zombie, or now another process's). Then the run is dead at once; otherwise (alive, another machine,
an unknown holder) only the lapsed heartbeat tells, as before.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

MAX_HOLDER = 300  # characters a holder may take in a store


@runtime_checkable
class Processes(Protocol):
    def me(self) -> str:
        """This process as a run's holder: an opaque text of at most MAX_HOLDER characters."""
        ...

    def gone(self, holder: str) -> bool:
        """True only when the process that wrote ``holder`` (a ``me()``) has surely ended; False when it
        is alive or nothing can be told (another machine, an empty or unknown holder)."""
        ...


class UnknownProcesses(Processes):
    """No holder is ever known gone: runs are judged by their heartbeat alone (the default of use cases
    built without a Processes adapter)."""

    def me(self) -> str:
        return ""

    def gone(self, holder: str) -> bool:
        return False


UNKNOWN_PROCESSES = UnknownProcesses()
