"""Events built from records (spec 000 §13.3) in the SQL store: written with the record's other facts
(sqlalchemy_graph_derived.py) and forgotten with them. A mixin of the SQL store."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Column, Float, Index, Integer, String, Table, Text, delete, insert, select
from sqlalchemy.engine import Connection

from adapters.sql.base import metadata
from adapters.sql.graph import _parts
from domain.graph.model import NO_DATE, Event, Evidence
from domain.ports.graph import Origin
from domain.validation import epoch

graph_events = Table(
    "graph_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("owner", String(100), nullable=False),
    Column("kind", String(12), nullable=False),
    Column("summary", Text, nullable=False),
    Column("who", Text, nullable=False),
    Column("event_date", String(40), nullable=True),
    Column("event_epoch", Float, nullable=False),
    Column("dated_by", String(8), nullable=False),
    Column("date_text", String(200), nullable=True),
    Column("origin_kind", String(10), nullable=False),
    Column("origin_id", String(200), nullable=False),
    Column("part", Integer, nullable=False),
    Column("excerpt", Text, nullable=False),
    Column("valid_from", String(40), nullable=True),
    Index("ix_graph_events_owner_date", "owner", "event_epoch", "id"),
    Index("ix_graph_events_origin", "origin_id", "origin_kind"),
)


def write_events(conn: Connection, owner: str, events: Sequence[Event]) -> None:
    rows = [{"owner": owner, "kind": e.kind, "summary": e.summary, "who": json.dumps(list(e.who)),
             "event_date": e.date, "event_epoch": epoch(e.date) if e.date else NO_DATE, "dated_by": e.dated_by,
             "date_text": (e.date_text or "")[:200] or None, "origin_kind": e.evidence.kind,
             "origin_id": e.evidence.record_id, "part": e.evidence.part, "excerpt": e.evidence.excerpt,
             "valid_from": e.evidence.when} for e in events]
    if rows:
        conn.execute(insert(graph_events), rows)


def forget_events(conn: Connection, owner: str | None, origins: set[Origin]) -> None:
    g = graph_events
    for part in _parts(sorted({rid for _, rid in origins})):
        query = select(g.c.id, g.c.origin_kind, g.c.origin_id).where(g.c.origin_id.in_(part))
        query = query.where(g.c.owner == owner) if owner is not None else query
        gone = [i for i, kind, rid in conn.execute(query).tuples() if (kind, rid) in origins]
        if gone:
            conn.execute(delete(g).where(g.c.id.in_(gone)))


class SqlGraphEvents:
    def events(self, owner: str, since: float | None = None, until: float | None = None,
               kinds: Sequence[str] | None = None, who: str | None = None, origins: Sequence[Origin] | None = None,
               conversation_id: str | None = None, limit: int = 100, after: tuple[float, int] | None = None
               ) -> list[tuple[int, float, Event]]:
        g = graph_events.c
        query = select(graph_events).where(g.owner == owner).order_by(g.event_epoch, g.id)
        query = query.where(g.event_epoch >= since) if since is not None else query
        query = query.where(g.event_epoch <= until) if until is not None else query
        query = query.where(g.kind.in_(list(kinds))) if kinds is not None else query
        query = query.where(g.who.like('%' + json.dumps(who)[1:-1].replace("%", "") + '%')) if who else query
        if conversation_id is not None:
            query = query.where(g.origin_kind == "turn", g.origin_id.like(conversation_id.replace("%", "") + "_turn_%"))
        if origins is not None:
            query = query.where(g.origin_id.in_(sorted({rid for _, rid in origins})))
        if after is not None:
            query = query.where((g.event_epoch > after[0]) | ((g.event_epoch == after[0]) & (g.id > after[1])))
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(query.limit(limit if who is None and origins is None else limit * 4)).all()
        found = [(r.id, r.event_epoch, _event(r)) for r in rows]
        if who is not None:
            found = [f for f in found if who in f[2].who]
        if origins is not None:
            wanted = set(origins)
            found = [f for f in found if (f[2].evidence.kind, f[2].evidence.record_id) in wanted]
        return found[:limit]


def _event(r: object) -> Event:
    return Event(r.kind, r.summary, tuple(json.loads(r.who)), r.event_date, r.dated_by,  # type: ignore[attr-defined]
                 Evidence(r.origin_kind, r.origin_id, r.part, "", r.excerpt, r.valid_from),  # type: ignore[attr-defined]
                 r.date_text)  # type: ignore[attr-defined]


