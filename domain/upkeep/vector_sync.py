"""The vector index follows the store: queued owners are synced in batches; searches read their writes."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from domain.access.rules import ACL_PREFIX
from domain.errors import StorageError
from domain.model import EmbeddingProfile, OutboxItem, VectorRecord
from domain.ports import VectorIndex, VectorOutbox

# Vectors of artifacts and chunks are owned by their artifact; the others by their own record.
OWNER_FIELDS = {"artifact": "artifact_id", "chunk": "artifact_id"}
COLLECTIONS = ("memory", "history", "history_context", "artifact", "chunk", "entity")  # entity: domain/graph/entities.py


def owner_field(collection: str) -> str:
    return OWNER_FIELDS.get(collection, "record_id")


# What an index that leaves the access rule to the rows (``VectorIndex.filters_cheaply`` False) is never
# asked to filter on: the access keys and expiry (searches check them on the rows), what the vector id
# says (its version and piece), and the chunk's place (read from its row).
UNFILTERED = frozenset({"expires_epoch", "version", "piece", "chunk_index"})


def filtered_fields(collection: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a vector's metadata such an index keeps: what searches, syncs and deletes filter on.
    A chunk's or artifact's vectors are found by their artifact, so their record id goes too."""
    dropped = UNFILTERED | ({"record_id"} if collection in OWNER_FIELDS else set())
    return {k: v for k, v in metadata.items() if k not in dropped and not k.startswith(ACL_PREFIX)}


@dataclass(frozen=True, slots=True)
class SyncVectors:
    """Moves committed work from the store's outbox into the vector index.

    Each item names an owner; the index is made to hold exactly the vectors the store holds for it
    (upsert those, delete the rest), so replaying an item, or items out of order, converges.
    """

    outbox: VectorOutbox
    vectors: VectorIndex
    batch: int = 256

    def step(self) -> int:
        """One batch; the number of items done (0: nothing queued that nobody else holds)."""
        with self.outbox.claim(self.batch) as items:
            groups: dict[str, list[OutboxItem]] = defaultdict(list)
            for item in items:
                groups[item.collection].append(item)
            for collection, group in groups.items():
                self._sync(collection, group)
            return len(items)

    def _sync(self, collection: str, items: list[OutboxItem]) -> None:
        """Upsert the owners' vectors and delete the rest of theirs. Owners whose only items are fresh
        have none to delete, so the index is not asked for them (that lookup was a tenth of an ingest)."""
        owners = sorted({item.owner for item in items if not item.fresh})
        wanted: dict[str, VectorRecord] = {r.id: r for item in items for r in item.records}
        present = self.vectors.vector_ids(collection, {owner_field(collection): {"$in": owners}}) if owners else []
        self.vectors.upsert(collection, list(wanted.values()))
        stale = [vid for vid in present if vid not in wanted]
        if stale:
            self.vectors.delete_vectors(collection, stale)

    def drain(self) -> int:
        """Everything queued now (a worker's round); items others hold are left to them."""
        done = 0
        while (count := self.step()):
            done += count
        return done

    def catch_up(self, timeout: float = 60.0) -> None:
        """Return once everything committed before this call is in the index (read-your-writes).

        Items another worker holds are waited for, up to ``timeout`` seconds.
        """
        target = self.outbox.last_queued()
        deadline = time.monotonic() + timeout
        while (oldest := self.outbox.oldest_queued()) is not None and oldest <= target:
            if self.step() == 0:
                if time.monotonic() > deadline:
                    raise StorageError("The vector index is behind the store (another worker holds its "
                                       "queue); retry in a moment")
                time.sleep(0.005)


@dataclass(frozen=True, slots=True)
class RebuildVectors:
    """Rebuild the vector index from the vectors the store holds: no re-embedding."""

    outbox: VectorOutbox
    vectors: VectorIndex
    page: int = 2_000

    def __call__(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for collection in COLLECTIONS:
            self.vectors.drop(collection)
            after, total = "", 0
            while (records := self.outbox.stored_vectors(collection, after, self.page)):
                self.vectors.upsert(collection, records)
                total += len(records)
                after = records[-1].id
            counts[collection] = total
        return counts


@dataclass(frozen=True, slots=True)
class AdoptIndexedVectors:
    """Once per profile: the store takes over the vectors the index holds (an older store, a switch).

    A store written by an older release kept its vectors only in the index; after a re-embed and a
    switch the new profile's vectors are in its index only. Either way they are copied into the
    store, which is then the source the index is rebuilt from.
    """

    outbox: VectorOutbox
    vectors: VectorIndex
    profile: EmbeddingProfile
    page: int = 2_000

    def __call__(self) -> int | None:
        return self.outbox.adopt_vectors(self.profile.key, self._pages)

    def _pages(self) -> Iterator[tuple[str, list[VectorRecord]]]:
        for collection in COLLECTIONS:
            offset = 0
            while (records := self.vectors.export(collection, offset, self.page)):
                yield collection, records
                offset += len(records)
