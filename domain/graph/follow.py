"""The background graph: each owner's graph follows what they write, with no build_graph call.

Every write of a memory, a turn or an artifact leaves a row in the change log in its own transaction
(domain/changes). One worker per store (a lease: ``GraphFeed.claim_follow``) reads the log after its
durable cursor, a page at a time: the records those changes name, each read once however often it
changed (a burst is read in batches), are read into their owners' graphs exactly as build_graph reads
them (domain/graph/build.py: same passages, digests, extractor and resolution, one transaction per
batch), a record gone or no longer the owner's to read is forgotten; then the cursor moves past the
page. The write never waits for any of it. A crash before the cursor moved reads the page again: each
record whose digest the graph holds already is skipped, so nothing is missed and nothing is doubled.

An owner's background graph is read from their own records, as they may read them (the local owner at
its clearance; a token's user at ``normal``); what others share with them comes with build_graph.
Documents are read only when asked (``documents``), as their markup still gives noisy entities.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from domain.access.principal import LOCAL_USER, Principal, RequestContext, local_principal
from domain.common import audit, utc_now
from domain.graph.build import BATCH, BuildGraph, owner_lock
from domain.graph.model import GraphBuild
from domain.graph.records import Readable, Source
from domain.graph.resolve import Resolver
from domain.graph.usecases import COLLECTION
from domain.ports.graph_follow import GraphFeed, Written

PAGE = 500  # changes a round reads
LEASE = 60.0  # seconds the worker holds the store's follower lease without renewing it
GRACE = 30.0  # seconds a skipped sequence number (a transaction still open, on PostgreSQL) is looked for
MAX_HOLES = 1000
MAX_ERRORS = 20
VIA = "background graph"
KINDS = {"memory": "memory", "turn": "turn", "artifact": "artifact"}  # change log collection -> graph kind


@dataclass(frozen=True, slots=True)
class Round:
    """What one round did: changes taken, records read, forgotten, and the errors of records not read."""

    changes: int = 0
    read: int = 0
    forgotten: int = 0
    errors: tuple[str, ...] = ()
    moved: bool = False  # the cursor moved: there may be more to read


def background_principal(local_clearance: str) -> Callable[[str], Principal]:
    """An owner as the background reads for them: the local owner at its clearance, a token's user at
    ``normal`` (a token's clearance is its own: what more it may read comes with its build_graph)."""
    return lambda owner: local_principal(local_clearance) if owner == LOCAL_USER else Principal(owner)


@dataclass
class FollowGraph:
    build: BuildGraph  # its store, extractor, resolution and batch reading
    feed: GraphFeed
    principal: Callable[[str], Principal]  # an owner as the background reads for them
    documents: bool = False
    page: int = PAGE
    holder: str = field(default_factory=lambda: uuid.uuid4().hex)
    now: Callable[[], float] = time.time
    contexts: dict[str, dict[str, str]] = field(default_factory=dict)  # owner -> sentences naming entities

    @property
    def collections(self) -> tuple[str, ...]:
        return ("memory", "turn", "artifact") if self.documents else ("memory", "turn")

    def behind(self) -> int:
        """Changes written that the background graph has not read yet (0: it is current)."""
        state = self.feed.follow_state() or {}
        waiting = len([h for h in state.get("holes", {}) if self.feed.changes_at([int(h)], self.collections)])
        return self.feed.count_after(int(state.get("seq", 0)), self.collections) + waiting

    def report(self) -> dict[str, Any]:
        """What graph_status says of the background graph: how many writes it has yet to read (0: current),
        when it last read any, and the latest records it could not read."""
        state = self.state()
        waiting = self.behind()
        return {"enabled": True, "current": waiting == 0, "behind": waiting, "documents": self.documents,
                "updated": state.get("updated"), "errors": list(state.get("errors", []))[-5:]}

    def state(self) -> dict[str, Any]:
        return self.feed.follow_state() or {"seq": 0, "holes": {}}

    def step(self, stopping: Callable[[], bool] = lambda: False) -> Round:
        """One round: the changes after the cursor (at most ``page``) read into their owners' graphs, and
        the cursor moved past them; nothing when another worker holds the lease or nothing is new."""
        now, state = self.now(), self.state()
        if not state.get("holes") and not self.feed.changes_after(int(state.get("seq", 0)), 1):
            return Round()  # nothing new: the store is not written (not even the lease)
        if not self.feed.claim_follow(self.holder, now + LEASE, now):
            return Round()
        state = self.state()
        seq = int(state.get("seq", 0))
        holes = {int(k): float(v) for k, v in state.get("holes", {}).items()}
        late = self.feed.changes_at(sorted(holes), ("memory", "turn", "artifact", "graph")) if holes else []
        fresh = self.feed.changes_after(seq, self.page)
        expected = seq + 1
        for number, _, _ in fresh:
            holes |= {missing: now for missing in range(expected, number)}
            expected = number + 1
        for number, _, _ in late:
            holes.pop(number, None)
        holes = {n: at for n, at in sorted(holes.items())[-MAX_HOLES:] if now - at < GRACE}
        taken = [w for w in late + fresh if w[1] in self.collections]
        done = self._read(taken, stopping)
        if done is None:  # stopped, or the lease lost: the next holder reads the page again
            return Round()
        errors = [*state.get("errors", []), *done.errors][-MAX_ERRORS:]
        moved = {"seq": max([seq, *(n for n, _, _ in fresh)]), "holes": {str(n): at for n, at in holes.items()},
                 "errors": errors, "updated": utc_now() if (fresh or late) else state.get("updated")}
        if moved != state:
            self.feed.save_follow_state(moved)
        return replace(done, moved=moved["seq"] != seq)

    def _read(self, taken: list[Written], stopping: Callable[[], bool]) -> Round | None:
        by_kind: dict[str, list[str]] = {}
        for _, collection, item_id in taken:
            by_kind.setdefault(KINDS[collection], [])
            if item_id not in by_kind[KINDS[collection]]:
                by_kind[KINDS[collection]].append(item_id)
        owners = self._owners(by_kind)
        gone = [(kind, i) for kind, ids in by_kind.items() for i in ids if (kind, i) not in owners]
        forgotten = self.build.derived.forget_sources(None, gone, None) if gone else 0
        read, errors = 0, []
        for owner in sorted(set(owners.values())):
            mine = [origin for origin, who in owners.items() if who == owner]
            with owner_lock(owner):
                done = self._owner(owner, mine, stopping)
            if done is None:
                return None
            read, forgotten, errors = read + done.read, forgotten + done.forgotten, errors + list(done.errors)
        return Round(len(taken), read, forgotten, tuple(errors))

    def _owners(self, by_kind: dict[str, list[str]]) -> dict[tuple[str, str], str]:
        """The owner of each record named that exists."""
        store = self.build.store
        found: dict[tuple[str, str], str] = {}
        for kind, ids in by_kind.items():
            rows: dict[str, Any] = (store.get_memories(ids) if kind == "memory" else store.get_turns(ids)
                                    if kind == "turn" else store.get_artifacts(ids))  # type: ignore[attr-defined]
            found |= {(kind, i): row.owner for i, row in rows.items()}
        return found

    def _owner(self, owner: str, origins: list[tuple[str, str]], stopping: Callable[[], bool]) -> Round | None:
        build = self.build
        extractor = build.extractors[build.extractor]
        context = RequestContext(principal=self.principal(owner), via=VIA)
        readable = Readable(build.store, build.scopes, build.policies, context, self.now(), extractor.version,
                            build.chunkers)
        sources: list[Source] = []
        for kind in KINDS.values():
            ids = [i for k, i in origins if k == kind]
            sources += readable.picked(kind, ids) if ids else []
        held = build.derived.source_digests(owner, origins)
        readable_now = {(s.kind, s.record_id) for s in sources}
        unread = [o for o in origins if o in held and o not in readable_now]  # no longer theirs to read
        forgotten = build.derived.forget_sources(owner, unread, audit(
            "build_graph", COLLECTION, [i for _, i in unread][:50], build.clock(), context,
            forgotten=len(unread))) if unread else 0
        todo = sorted((s for s in sources if held.get((s.kind, s.record_id)) != s.digest), key=lambda s: s.ts)
        if not todo:
            return Round(0, 0, forgotten)
        resolver = Resolver({e.name: e.entity_type for e in build.graph.entities(owner)},
                            build.derived.aliases(owner), build.embed, context=self.contexts.setdefault(owner, {}))
        counts = GraphBuild(VIA, owner, "running", "", "")
        errors: list[str] = []
        for start in range(0, len(todo), BATCH):
            now = self.now()
            if stopping() or not self.feed.claim_follow(self.holder, now + LEASE, now):
                return None
            counts = build.read_batch(counts, todo[start:start + BATCH], extractor, resolver, context, errors)
        return Round(0, counts.done, forgotten, tuple(errors))
