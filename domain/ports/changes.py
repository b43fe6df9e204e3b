"""The port of the change log: the changes of items each audited write touched, in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from domain.changes.model import Change


@runtime_checkable
class ChangeLog(Protocol):
    def changes(self, since: float | None, until: float | None, after: tuple[float, int] | None = None, limit: int = 100,
                kinds: Sequence[str] | None = None, collections: Sequence[str] | None = None,
                conversation_id: str | None = None, source: str | None = None,
                item_ids: Sequence[str] | None = None) -> list[Change]:
        """Changes oldest first (by time, then sequence number), those after ``after`` (a change's (epoch
        time, seq)), at most ``limit``; each filter (a time range in epoch seconds, kinds, collections, a
        conversation, a source, item ids) narrows them."""
        ...
