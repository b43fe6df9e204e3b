"""The background graph's feed in memory: the change log (InMemoryChangeLog) read by sequence number, the
follower's cursor and lease in attributes. The fake of domain/ports/graph_follow.py."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any


class InMemoryGraphFollow:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.follow: dict[str, Any] | None = None
        self.follow_lease: tuple[str, float] = ("", 0.0)
        self._follow_lock = threading.Lock()

    def _written(self, collections: Sequence[str]) -> list[tuple[int, str, str]]:
        return [(c.seq, c.collection, c.item_id) for c in list(self.change_log)  # type: ignore[attr-defined]
                if c.collection in collections]

    def changes_after(self, seq: int, limit: int) -> list[tuple[int, str, str]]:
        return [(c.seq, c.collection, c.item_id) for c in list(self.change_log) if c.seq > seq][:limit]  # type: ignore[attr-defined]

    def changes_at(self, seqs: Sequence[int], collections: Sequence[str]) -> list[tuple[int, str, str]]:
        wanted = set(seqs)
        return [w for w in self._written(collections) if w[0] in wanted]

    def last_change(self) -> int:
        return max((c.seq for c in list(self.change_log)), default=0)  # type: ignore[attr-defined]

    def count_after(self, seq: int, collections: Sequence[str]) -> int:
        return sum(1 for w in self._written(collections) if w[0] > seq)

    def follow_state(self) -> dict[str, Any] | None:
        return copy.deepcopy(self.follow)

    def save_follow_state(self, state: dict[str, Any]) -> None:
        self.follow = copy.deepcopy(state)

    def claim_follow(self, holder: str, until: float, now: float) -> bool:
        with self._follow_lock:
            held, expires = self.follow_lease
            if held not in ("", holder) and expires > now:
                return False
            self.follow_lease = (holder, until)
            return True
