"""Ports of spec 004's project documents: every version of every item, and durable idempotency keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ItemVersion:
    """One version of a project item (version_num from 1); the newest is the item's current text."""

    project: str
    item_id: str
    version_num: int
    kind: str  # spec, plan, decision, troubleshooting, note
    title: str
    content: str
    content_hash: str
    created_at: str
    canonical_key: str | None = None
    doc_class: str | None = None
    tags: tuple[str, ...] = ()
    pinned: bool = False
    status: str = "active"  # or "archived"
    session_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KeyedResult:
    """What an idempotency key holds: the payload's hash and, once done, the first call's result."""

    key: str
    tool: str
    payload_hash: str
    result: dict[str, Any] | None  # None while the first call is still under way
    claimed_at: float


@runtime_checkable
class DocumentStore(Protocol):
    """Item versions and idempotency keys, in the store (durable, shared by every replica)."""

    def add_version(self, version: ItemVersion) -> ItemVersion:
        """Append a version of ``version.item_id``: its version_num is the item's last + 1 (1 for a new
        item), whatever ``version.version_num`` says; concurrent appends get distinct numbers. Returns
        the version as stored."""
        ...

    def item_version(self, project: str, item_id: str, version_num: int | None = None) -> ItemVersion | None:
        """One version of an item (the newest when ``version_num`` is None); None if there is none."""
        ...

    def item_versions(self, project: str, item_id: str) -> list[ItemVersion]:
        """Every version of an item, oldest first."""
        ...

    def versions_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[ItemVersion]:
        """Every version of every item, by project, item id, then version number; ``after``: only those
        past that (project, item_id, version_num). An export's walk."""
        ...

    def canonical_item(self, project: str, canonical_key: str) -> str | None:
        """The id of the item holding the canonical document of that key in the project, if any."""
        ...

    def latest_items(self, project: str, kinds: Sequence[str] | None = None, include_archived: bool = False,
                     pinned_only: bool = False, since: str | None = None, session_id: str | None = None,
                     limit: int = 100) -> list[ItemVersion]:
        """The newest version of each item of the project, filtered; pinned first, then most recently
        created first, then item id (a stable order)."""
        ...

    def mark_projected(self, project: str, item_id: str, version_num: int) -> None:
        """The item's artifact now holds this version: it and every older version need no projection."""
        ...

    def unprojected(self, before: float, limit: int = 50) -> list[ItemVersion]:
        """Versions created at or before ``before`` (epoch seconds) whose artifact was never written (a
        write that stopped between the version and its artifact), oldest first, across projects."""
        ...

    def claim_key(self, project: str, key: str, tool: str, payload_hash: str, now: float) -> KeyedResult | None:
        """Claim an idempotency key for a first call: None when this call claimed it (it must then
        ``finish_key`` or ``release_key``), else what the key already holds."""
        ...

    def finish_key(self, project: str, key: str, result: dict[str, Any], claimed_at: float | None = None) -> bool:
        """Record the first call's result under its key (durable). With ``claimed_at`` (the claim's time,
        a fencing token) only while that claim still holds the key: False when another call took a stale
        claim over meanwhile (its result stands)."""
        ...

    def renew_key(self, project: str, key: str, claimed_at: float, now: float) -> bool:
        """Keep a claim under way alive: move its claim time (the fencing token) from ``claimed_at`` to
        ``now``. False when that claim no longer holds the key (finished, released or taken over)."""
        ...

    def release_key(self, project: str, key: str, claimed_at: float | None = None) -> None:
        """Give a claimed key up (its call failed): the next call with it starts afresh. With
        ``claimed_at``, only that claim (never one another call took over)."""
        ...


@runtime_checkable
class ProjectResolver(Protocol):
    """Which project a client works in, from the roots it declares (spec 004 milestone 1)."""

    def project_of(self, root_uris: Sequence[str], read_disk: bool = True) -> str | None:
        """A stable project id: the first ``file://`` root's git remote URL hashed, else its path hashed;
        None when no root names a local directory. ``read_disk`` False (a client over HTTP, whose roots
        are paths on its own machine): the first ``file://`` root's path hashed, the server's disk never
        looked at, so a caller cannot learn from its project what the server's folders hold."""
        ...
