"""The background graph's feed in the SQL store (domain/ports/graph_follow.py): the change log read by
sequence number, the follower's cursor and its lease in store_meta. A mixin of the SQL store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from adapters.sql.changes import changes
from adapters.sql.tables import put_meta, store_meta

STATE, LEASE = "graph_follow", "graph_follow_lease"


class SqlGraphFollow:
    def changes_after(self, seq: int, limit: int) -> list[tuple[int, str, str]]:
        c = changes.c
        query = select(c.seq, c.collection, c.item_id).where(c.seq > seq).order_by(c.seq).limit(limit)
        with self._read() as conn:  # type: ignore[attr-defined]
            return [(int(s), str(k), str(i)) for s, k, i in conn.execute(query).tuples()]

    def changes_at(self, seqs: Sequence[int], collections: Sequence[str]) -> list[tuple[int, str, str]]:
        if not seqs:
            return []
        c = changes.c
        query = (select(c.seq, c.collection, c.item_id).where(c.seq.in_(list(seqs)), c.collection.in_(list(collections)))
                 .order_by(c.seq))
        with self._read() as conn:  # type: ignore[attr-defined]
            return [(int(s), str(k), str(i)) for s, k, i in conn.execute(query).tuples()]

    def last_change(self) -> int:
        with self._read() as conn:  # type: ignore[attr-defined]
            return int(conn.execute(select(func.max(changes.c.seq))).scalar() or 0)

    def count_after(self, seq: int, collections: Sequence[str]) -> int:
        c = changes.c
        with self._read() as conn:  # type: ignore[attr-defined]
            return int(conn.execute(select(func.count()).select_from(changes).where(
                c.seq > seq, c.collection.in_(list(collections)))).scalar() or 0)

    def follow_state(self) -> dict[str, Any] | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            raw = conn.execute(select(store_meta.c.value).where(store_meta.c.key == STATE)).scalar()
        return json.loads(raw) if raw else None

    def save_follow_state(self, state: dict[str, Any]) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            put_meta(conn, STATE, json.dumps(state, sort_keys=True))

    def claim_follow(self, holder: str, until: float, now: float) -> bool:
        with self._write() as conn:  # type: ignore[attr-defined]
            put_meta(conn, LEASE, json.dumps({"holder": "", "until": 0.0}), replace=False)
            raw = conn.execute(select(store_meta.c.value).where(store_meta.c.key == LEASE)
                               .with_for_update()).scalar()  # PostgreSQL: replicas claim it one at a time
            lease = json.loads(raw or "{}")
            if lease.get("holder") not in ("", holder) and float(lease.get("until", 0.0)) > now:
                return False
            put_meta(conn, LEASE, json.dumps({"holder": holder, "until": until}))
            return True
