"""In-memory fake of the vector outbox and key locks: stored vectors per (collection, owner) and a queue."""

from __future__ import annotations

import threading
from dataclasses import replace
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from domain.locking import KeyedLock
from adapters.vectors.similarity import cosine, matches
from domain.model import OutboxItem, Vector, VectorMatch, VectorRecord
from domain.ports import Filter, KeyLocks, VectorOutbox


class InMemoryVectorOutbox(VectorOutbox, KeyLocks):
    """Vectors per (collection, owner), each flagged pending or not, and the queued owners."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], dict[str, tuple[VectorRecord, bool]]] = {}
        self.queued: list[tuple[int, str, str, bool]] = []
        self._seq = 0
        self._guard = threading.RLock()
        self._claiming = threading.Lock()
        self._keyed = KeyedLock()
        self.vectors_profile: str | None = None

    # --- used by the fake stores' writes -----------------------------------------------------
    def _put(self, collection: str, owner: str, records: Sequence[VectorRecord], pending: bool = False) -> None:
        with self._guard:
            slot = self.stored.setdefault((collection, owner), {})
            for record in records:
                slot[record.id] = (record, pending)

    def _drop(self, collections: Sequence[str], owner: str, version: str | None = None) -> None:
        with self._guard:
            for collection in collections:
                slot = self.stored.get((collection, owner), {})
                for vid in [v for v, (r, _) in slot.items() if version in (None, r.metadata.get("version"))]:
                    del slot[vid]

    def _queue(self, collections: Sequence[str], owner: str, fresh: bool = False) -> None:
        with self._guard:
            for collection in collections:
                self._seq += 1
                self.queued.append((self._seq, collection, owner, fresh))

    # --- the port ----------------------------------------------------------------------------
    def last_queued(self) -> int:
        with self._guard:
            return self.queued[-1][0] if self.queued else 0

    def oldest_queued(self) -> int | None:
        with self._guard:
            return self.queued[0][0] if self.queued else None

    @contextmanager
    def claim(self, limit: int) -> Iterator[list[OutboxItem]]:
        with self._claiming:
            with self._guard:
                rows = self.queued[:limit]
                items = [OutboxItem(seq, collection, owner, tuple(
                    r for r, pending in self.stored.get((collection, owner), {}).values() if not pending), fresh)
                    for seq, collection, owner, fresh in rows]
            yield items
            with self._guard:
                done = {seq for seq, *_ in rows}
                self.queued = [row for row in self.queued if row[0] not in done]

    def nearest_queued(self, collection: str, vector: Vector, limit: int,
                       where: Filter | None = None) -> tuple[set[str], list[VectorMatch]]:
        with self._guard:
            owners = {owner for _, c, owner, _ in self.queued if c == collection}
            records = [r for owner in owners for r, pending in self.stored.get((collection, owner), {}).values()
                       if not pending and matches(r.metadata, where)]
        scored = sorted((VectorMatch(r.id, r.record_id, cosine(vector, r.vector)) for r in records),
                        key=lambda m: -m.score)
        return owners, scored[:limit]

    def similarities(self, collection: str, vector: Vector, record_ids: Sequence[str]) -> dict[str, float]:
        wanted = set(record_ids)
        best: dict[str, float] = {}
        with self._guard:
            for (c, _), slot in self.stored.items():
                for r, pending in slot.values():
                    if c == collection and not pending and r.record_id in wanted:
                        best[r.record_id] = max(best.get(r.record_id, -1.0), cosine(vector, r.vector))
        return best

    def stored_vectors(self, collection: str, after: str, limit: int) -> list[VectorRecord]:
        with self._guard:
            found = sorted((r for (c, _), slot in self.stored.items() if c == collection
                            for r, pending in slot.values() if not pending and r.id > after), key=lambda r: r.id)
        return found[:limit]

    def vectors_by_text(self, keys: Sequence[str]) -> dict[str, Vector]:
        wanted = set(keys)
        with self._guard:
            return {r.text_key: list(r.vector) for slot in self.stored.values() for r, _ in slot.values()
                    if r.text_key in wanted and r.text_key is not None}

    def count_vectors(self, collection: str) -> int:
        with self._guard:
            return sum(1 for (c, _), slot in self.stored.items() if c == collection
                       for _, pending in slot.values() if not pending)

    def adopt_vectors(self, profile_key: str,
                      pages: Callable[[], Iterator[tuple[str, list[VectorRecord]]]]) -> int | None:
        with self._guard:
            if self.vectors_profile == profile_key:
                return None
            if self.vectors_profile is None and self.stored:  # written by this release from the start
                self.vectors_profile = profile_key
                return None
            # An index keeps only what it filters on: the rest of each adopted vector's metadata comes
            # from the store's copy of the same piece.
            aside = {(c, vid): r.metadata for (c, _), slot in self.stored.items() for vid, (r, _) in slot.items()}
            self.stored.clear()
            count = 0
            for collection, records in pages():
                for record in records:
                    kept = aside.get((collection, record.id))
                    record = replace(record, metadata={**kept, **record.metadata}) if kept else record
                    owner = str(record.metadata["artifact_id"]) if collection in ("artifact", "chunk") else record.record_id
                    self._put(collection, owner, [record])
                    count += 1
            self._adopted()
            self.vectors_profile = profile_key
            return count

    def _adopted(self) -> None:
        """After an adoption: what the store's rows say that the index's copy may not."""

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._keyed.hold(key):
            yield
