"""Reading the audit log: who wrote, changed, deleted or was refused what (ids and actions, never
content). The data dir's owner (the local user) reads every entry; anyone else only their own."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.access.principal import LOCAL_USER, Identity
from domain.model import AuditEntry, RequestContext
from domain.ports import AuditLog
from domain.validation import epoch, require_int

SCANNED = 20_000  # newest entries a query looks through


@dataclass(frozen=True, slots=True)
class AuditQuery:
    actor: str | None = None
    action: str | None = None
    collection: str | None = None
    since: str | None = None  # ISO-8601, inclusive
    until: str | None = None  # ISO-8601, exclusive
    via: str | None = None  # the client: a token's id (its calls through the page too)
    limit: int = 100


@dataclass(frozen=True, slots=True)
class ReadAudit:
    log: AuditLog
    identity: Identity = RequestContext

    def __call__(self, query: AuditQuery) -> list[AuditEntry]:
        """Newest first, at most ``limit``, among the newest SCANNED entries."""
        limit = require_int("limit", query.limit, 1, 1000)
        since = None if not query.since else epoch(query.since, "since")
        until = None if not query.until else epoch(query.until, "until")
        me = self.identity().principal.user_id
        actor = query.actor if me == LOCAL_USER else me
        kept: list[AuditEntry] = []
        for entry in self.log.recent(SCANNED):
            if matches(entry, actor, query.action, query.collection, since, until) and (
                    not query.via or query.via in str(entry.detail.get("via") or "")):
                kept.append(entry)
                if len(kept) == limit:
                    break
        return kept

    def actors(self) -> Sequence[str]:
        """Who appears among the newest entries the caller may read (a filter's choices)."""
        me = self.identity().principal.user_id
        return sorted({e.actor for e in self.log.recent(SCANNED)}) if me == LOCAL_USER else [me]

    def choices(self) -> AuditChoices:
        """The actors, actions and kinds (collections) among the newest entries the caller may read: the
        filters' choices, so a filter offers what the log holds instead of free text."""
        me = self.identity().principal.user_id
        entries = [e for e in self.log.recent(SCANNED) if me == LOCAL_USER or e.actor == me]
        return AuditChoices(actors=tuple(sorted({e.actor for e in entries} if me == LOCAL_USER else {me})),
                            actions=tuple(sorted({e.action for e in entries})),
                            collections=tuple(sorted({e.collection for e in entries})))


@dataclass(frozen=True, slots=True)
class AuditChoices:
    actors: tuple[str, ...]
    actions: tuple[str, ...]
    collections: tuple[str, ...]


def matches(entry: AuditEntry, actor: str | None, action: str | None, collection: str | None,
            since: float | None, until: float | None) -> bool:
    if (actor and entry.actor != actor) or (action and entry.action != action):
        return False
    if collection and entry.collection != collection:
        return False
    at = epoch(entry.ts)
    return (since is None or at >= since) and (until is None or at < until)
