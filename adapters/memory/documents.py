"""In-memory fake of the DocumentStore port (the same contract as adapters/sql/documents.py):
item versions and idempotency keys in dicts behind one lock. A mixin: compose it first, e.g.
``class Store(InMemoryDocuments, InMemoryStore)``."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from domain.ports.documents import DocumentStore, ItemVersion, KeyedResult
from domain.validation import epoch

CLAIM_LEASE_SECONDS = 300.0  # as in the SQL store: a claim without a result this long is its dead caller's


def _copied(value: Any) -> Any:
    """What a JSON column gives back: a fresh copy, nothing shared with the caller."""
    return json.loads(json.dumps(value))


class InMemoryDocuments(DocumentStore):
    """Every version of every item, per project; idempotency keys per project."""

    claim_lease = CLAIM_LEASE_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # super(DocumentStore, ...) on purpose: DocumentStore is a typing.Protocol whose placeholder
        # __init__ would end the chain here, leaving the other bases (InMemoryStore...) uninitialised.
        super(DocumentStore, self).__init__(*args, **kwargs)
        self._documents_lock = threading.RLock()
        self.item_rows: dict[tuple[str, str], list[ItemVersion]] = {}
        self.idempotency_keys: dict[tuple[str, str], KeyedResult] = {}
        self.unprojected_rows: set[tuple[str, str, int]] = set()

    # --- item versions -------------------------------------------------------------------------

    def add_version(self, version: ItemVersion) -> ItemVersion:
        epoch(version.created_at, "created_at")  # refused like the SQL store refuses it
        with self._documents_lock:
            versions = self.item_rows.setdefault((version.project, version.item_id), [])
            stored = replace(version, version_num=len(versions) + 1, tags=tuple(version.tags),
                             meta=_copied(version.meta))
            versions.append(stored)
            self.unprojected_rows.add((stored.project, stored.item_id, stored.version_num))
        return replace(stored, meta=_copied(stored.meta))

    def mark_projected(self, project: str, item_id: str, version_num: int) -> None:
        with self._documents_lock:
            self.unprojected_rows -= {row for row in self.unprojected_rows
                                      if row[:2] == (project, item_id) and row[2] <= version_num}

    def unprojected(self, before: float, limit: int = 50) -> list[ItemVersion]:
        with self._documents_lock:
            found = [self.item_rows[(p, i)][n - 1] for p, i, n in self.unprojected_rows]
        found = [v for v in found if epoch(v.created_at) <= before]
        found.sort(key=lambda v: (epoch(v.created_at), v.project, v.item_id, v.version_num))
        return [replace(v, meta=_copied(v.meta)) for v in found[:max(0, limit)]]

    def item_version(self, project: str, item_id: str, version_num: int | None = None) -> ItemVersion | None:
        with self._documents_lock:
            versions = list(self.item_rows.get((project, item_id), ()))
        if not versions:
            return None
        if version_num is None:
            found: ItemVersion | None = versions[-1]
        else:
            found = next((v for v in versions if v.version_num == version_num), None)
        return None if found is None else replace(found, meta=_copied(found.meta))

    def item_versions(self, project: str, item_id: str) -> list[ItemVersion]:
        with self._documents_lock:
            versions = list(self.item_rows.get((project, item_id), ()))
        return [replace(v, meta=_copied(v.meta)) for v in versions]

    def versions_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[ItemVersion]:
        with self._documents_lock:
            every = [v for versions in self.item_rows.values() for v in versions]
        ordered = sorted(every, key=lambda v: (v.project, v.item_id, v.version_num))
        if after is not None:
            ordered = [v for v in ordered if (v.project, v.item_id, v.version_num) > after]
        return [replace(v, meta=_copied(v.meta)) for v in ordered[:max(0, limit)]]

    def canonical_item(self, project: str, canonical_key: str) -> str | None:
        with self._documents_lock:
            holders = [v for (p, _), versions in self.item_rows.items() if p == project
                       for v in versions if v.canonical_key == canonical_key]
        if not holders:
            return None
        return min(holders, key=lambda v: (epoch(v.created_at), v.item_id, v.version_num)).item_id

    def latest_items(self, project: str, kinds: Sequence[str] | None = None, include_archived: bool = False,
                     pinned_only: bool = False, since: str | None = None, session_id: str | None = None,
                     limit: int = 100) -> list[ItemVersion]:
        after = None if since is None else epoch(since, "since")
        with self._documents_lock:
            newest = [versions[-1] for (p, _), versions in self.item_rows.items() if p == project and versions]
        found = [v for v in newest
                 if (not kinds or v.kind in kinds) and (include_archived or v.status != "archived")
                 and (not pinned_only or v.pinned) and (after is None or epoch(v.created_at) >= after)
                 and (session_id is None or v.session_id == session_id)]
        found.sort(key=lambda v: (not v.pinned, -epoch(v.created_at), v.item_id))
        return [replace(v, meta=_copied(v.meta)) for v in found[:max(0, limit)]]

    # --- idempotency keys ----------------------------------------------------------------------

    def claim_key(self, project: str, key: str, tool: str, payload_hash: str, now: float) -> KeyedResult | None:
        with self._documents_lock:
            held = self.idempotency_keys.get((project, key))
            if held is None or (held.result is None and held.claimed_at <= now - self.claim_lease):
                self.idempotency_keys[(project, key)] = KeyedResult(key, tool, payload_hash, None, now)
                return None
            return replace(held, result=None if held.result is None else _copied(held.result))

    def finish_key(self, project: str, key: str, result: dict[str, Any], claimed_at: float | None = None) -> bool:
        with self._documents_lock:
            held = self.idempotency_keys.get((project, key))
            if held is None or (claimed_at is not None and (held.claimed_at != claimed_at or held.result is not None)):
                return False
            self.idempotency_keys[(project, key)] = replace(held, result=_copied(result))
            return True

    def renew_key(self, project: str, key: str, claimed_at: float, now: float) -> bool:
        with self._documents_lock:
            held = self.idempotency_keys.get((project, key))
            if held is None or held.result is not None or held.claimed_at != claimed_at:
                return False
            self.idempotency_keys[(project, key)] = replace(held, claimed_at=now)
            return True

    def release_key(self, project: str, key: str, claimed_at: float | None = None) -> None:
        with self._documents_lock:
            held = self.idempotency_keys.get((project, key))
            if held is not None and held.result is None and claimed_at in (None, held.claimed_at):
                del self.idempotency_keys[(project, key)]
