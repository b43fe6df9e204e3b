"""Retention (spec 000 §3.2.2): expired artifacts, memories and turns are removed everywhere, once, audited; an item whose
policy is ``until_resolved`` expires when it is resolved. (Reads never return an expired item even
before the sweep: the access rule holds them to their expiry.)"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from domain.access.principal import Identity
from domain.artifacts.usecases import check_artifact_id
from domain.common import Clock, audit, check_change, utc_now
from domain.errors import MemtroveError, NotFoundError, ValidationError
from domain.history.usecases import conversation_lock
from domain.model import AuditEntry, RequestContext
from domain.ports import ArtifactStore, KeyLocks

SWEEP_LOCK = "retention-sweep"


@dataclass(frozen=True, slots=True)
class ExpireItems:
    """One sweep: every expired artifact (vectors, lexical entries, chunks), memory and turn deleted,
    each audited as "expired" by the server; serialised across processes and replicas by the store's lock."""

    store: ArtifactStore
    locks: KeyLocks
    clock: Clock = utc_now
    now: Callable[[], float] = time.time
    batch: int = 200

    def __call__(self) -> int:
        removed, failed = 0, None
        with self.locks.hold(SWEEP_LOCK):
            for collection, expired, delete, lock in (
                    ("artifact", self.store.expired_artifacts, self.store.delete_artifact, str),
                    ("memory", self._expired("memory"), self.store.delete_memory, str),
                    ("history", self._expired("history"), self.store.delete_turn, self._conversation)):
                try:
                    removed += self._sweep(collection, expired, delete, lock)
                except MemtroveError as exc:  # the other collections are still swept; this one next round
                    failed = failed or exc
        if failed is not None:
            raise failed
        return removed

    def _expired(self, collection: str) -> Callable[[float, int], list[str]]:
        return lambda now, limit: self.store.expired_items(collection, now, limit)

    def _conversation(self, turn_id: str) -> str:
        """A turn is deleted under its conversation's lock, as turns are appended (the turn after it
        is read again in the same transaction)."""
        turn = self.store.get_turns([turn_id]).get(turn_id)
        return conversation_lock(turn.owner, turn.conversation_id) if turn else turn_id

    def _sweep(self, collection: str, expired: Callable[[float, int], list[str]],
               delete: Callable[[str, AuditEntry], object], lock: Callable[[str], str]) -> int:
        removed = 0
        while ids := expired(self.now(), self.batch):
            for item_id in ids:
                with self.locks.hold(lock(item_id)):
                    entry = audit("expired", collection, [item_id], self.clock(), "retention")
                    gone = delete(item_id, entry)  # artifacts: None when gone already; else False
                    removed += gone is not None and gone is not False
            if len(ids) < self.batch:
                break
        return removed


@dataclass(frozen=True, slots=True)
class ResolveArtifact:
    """An ``until_resolved`` artifact is resolved: it expires now (removed everywhere, audited)."""

    store: ArtifactStore
    locks: KeyLocks
    identity: Identity = RequestContext
    clock: Clock = utc_now
    now: Callable[[], float] = time.time

    def __call__(self, artifact_id: object) -> str:
        art_id = check_artifact_id(artifact_id)
        context = self.identity()
        with self.locks.hold(art_id):
            found = self.store.get_artifact(art_id)
            check_change(self.store, context, found, "resolve", "artifact", art_id, "Artifact", "artifact_id",
                         self.clock(), self.now())
            if found is None:
                raise NotFoundError(f"Artifact {art_id} not found")
            if found.retention_policy != "until_resolved":
                raise ValidationError("artifact_id", f"Artifact {art_id} has retention_policy "
                                                     f"{found.retention_policy!r}; only until_resolved items are resolved")
            with suppress(NotFoundError):
                self.store.delete_artifact(art_id, audit("resolved", "artifact", [art_id], self.clock(), context))
        return art_id
