"""The port the background graph follows the store by: the change log read by sequence number (every
write of a memory, a turn or an artifact has a row there, written in the write's own transaction), a
durable cursor of how far the graph has read it, and a lease so that one worker per store follows it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

Written = tuple[int, str, str]  # (change seq, collection: memory|turn|artifact, item id)


@runtime_checkable
class GraphFeed(Protocol):
    def changes_after(self, seq: int, limit: int) -> list[Written]:
        """Changes (of any collection: a follower tells skipped numbers by them) with a sequence number
        above ``seq``, in sequence order, at most ``limit``."""
        ...

    def changes_at(self, seqs: Sequence[int], collections: Sequence[str]) -> list[Written]:
        """Those of the changes numbered ``seqs`` that exist (a number skipped by a transaction still open
        when the cursor passed it, committed since)."""
        ...

    def last_change(self) -> int:
        """The highest sequence number in the change log (0: none)."""
        ...

    def count_after(self, seq: int, collections: Sequence[str]) -> int:
        """How many changes of those collections are above ``seq``."""
        ...

    def follow_state(self) -> dict[str, Any] | None:
        """The follower's durable state (its cursor), as last saved; None: never saved."""
        ...

    def save_follow_state(self, state: dict[str, Any]) -> None: ...

    def claim_follow(self, holder: str, until: float, now: float) -> bool:
        """Hold the follower's lease until ``until`` when nobody else holds it past ``now`` (or ``holder``
        does already): True when ``holder`` holds it now."""
        ...
