"""Merged names (with their unmerge) and build_graph runs of the SQL store's graph. A mixin of the SQL
store beside sqlalchemy_graph_derived.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from sqlalchemy import Boolean, Column, Float, Index, Integer, String, Table, Text, delete, insert, select, update
from sqlalchemy.engine import Connection

from adapters.sql.base import metadata
from adapters.sql.graph import graph_entities, graph_observations, graph_relations
from adapters.sql.graph_derived import _cited, _entity_id, graph_evidence, move_evidence
from domain.graph.model import Alias, GraphBuild
from domain.model import AuditEntry

graph_aliases = Table(
    "graph_aliases", metadata,
    Column("owner", String(100), primary_key=True),
    Column("alias", String(1000), primary_key=True),
    Column("name", String(1000), primary_key=True),
    Column("method", String(20), nullable=False),
    Column("score", Float, nullable=False),
    Column("blocked", Boolean, nullable=False, default=False),
)
graph_builds = Table(
    "graph_builds", metadata,
    Column("id", String(64), primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("owner", String(100), nullable=False),
    Column("body", Text, nullable=False),
    Index("ix_graph_builds_owner", "owner", "seq"),
)


class SqlGraphBuilds:
    def aliases(self, owner: str) -> list[Alias]:
        a = graph_aliases
        with self._read() as conn:  # type: ignore[attr-defined]
            return [Alias(alias, name, method, score, bool(blocked)) for alias, name, method, score, blocked in
                    conn.execute(select(a.c.alias, a.c.name, a.c.method, a.c.score, a.c.blocked).where(
                        a.c.owner == owner).order_by(a.c.alias, a.c.name)).tuples()]

    @staticmethod
    def _record_aliases(conn: Connection, owner: str, aliases: Sequence[Alias]) -> None:
        a = graph_aliases
        for alias in aliases:
            if conn.execute(select(a.c.alias).where(a.c.owner == owner, a.c.alias == alias.alias,
                                                    a.c.name == alias.name)).first() is None:
                conn.execute(insert(a).values(owner=owner, alias=alias.alias, name=alias.name, method=alias.method,
                                              score=alias.score, blocked=False))

    def unmerge(self, owner: str, alias: str, name: str, entry: AuditEntry) -> int | None:
        a, e, o, r, ev = graph_aliases, graph_entities, graph_observations, graph_relations, graph_evidence
        with self._write() as conn:  # type: ignore[attr-defined]
            held = a.c.owner == owner, a.c.alias == alias, a.c.name == name, a.c.blocked.is_(False)
            if conn.execute(select(a.c.alias).where(*held)).first() is None:
                return None
            merged = conn.execute(select(e.c.id, e.c.entity_type).where(e.c.owner == owner, e.c.name == name)).first()
            moved = 0
            if merged is not None:
                into = _entity_id(conn, owner, alias, merged.entity_type)
                mine = list(conn.execute(select(ev.c.id).where(ev.c.fact_kind == "e", ev.c.fact_id == merged.id,
                                                               ev.c.mention == alias)).scalars())
                move_evidence(conn, mine, "e", into)
                moved += len(mine)
                seen = list(conn.execute(select(ev.c.id, ev.c.fact_id, o.c.content).join(
                    o, (ev.c.fact_kind == "o") & (ev.c.fact_id == o.c.id)).where(
                    o.c.entity_id == merged.id, ev.c.mention == alias)).tuples())
                old_observations = {fact for _, fact, _ in seen}
                for row_id, _, content in seen:
                    target = conn.execute(select(o.c.id).where(o.c.entity_id == into, o.c.content == content)).scalar()
                    if target is None:
                        target = conn.execute(insert(o).values(entity_id=into, content=content)).inserted_primary_key[0]
                    move_evidence(conn, [row_id], "o", int(target))
                    moved += 1
                bare = old_observations - _cited(conn, "o", old_observations)
                if bare:
                    conn.execute(delete(o).where(o.c.id.in_(sorted(bare))))
                moved += _split_relations(conn, owner, alias, name)
            conn.execute(update(a).where(*held).values(blocked=True))
            self._append(conn, entry)  # type: ignore[attr-defined]
        return moved

    def save_build(self, build: GraphBuild) -> None:
        b = graph_builds
        body = json.dumps(asdict(build), sort_keys=True)
        with self._write() as conn:  # type: ignore[attr-defined]
            if conn.execute(update(b).where(b.c.id == build.id).values(body=body)).rowcount:
                return
            seq = (conn.execute(select(b.c.seq).order_by(b.c.seq.desc()).limit(1)).scalar() or 0) + 1
            conn.execute(insert(b).values(id=build.id, seq=seq, owner=build.owner, body=body))

    def builds(self, owner: str, build_id: str | None = None, limit: int = 1) -> list[GraphBuild]:
        b = graph_builds
        query = select(b.c.body).where(b.c.owner == owner)
        query = query.where(b.c.id == build_id) if build_id is not None else query
        with self._read() as conn:  # type: ignore[attr-defined]
            bodies = list(conn.execute(query.order_by(b.c.seq.desc()).limit(limit)).scalars())
        return [_build(json.loads(body)) for body in bodies]


def _build(raw: dict) -> GraphBuild:
    return GraphBuild(**{**raw, "errors": tuple(raw.get("errors", ()))})


def _split_relations(conn: Connection, owner: str, alias: str, name: str) -> int:
    """The evidence of relations read with ``alias`` at one end moves to relations with ``alias`` there."""
    r, ev = graph_relations, graph_evidence
    moved = 0
    old: set[int] = set()
    for end in ("source", "target"):
        mention = ev.c.mention if end == "source" else ev.c.target_mention
        rows = conn.execute(select(ev.c.id, r.c.id, r.c.source, r.c.target, r.c.relation_type).join(
            r, (ev.c.fact_kind == "r") & (ev.c.fact_id == r.c.id)).where(
            r.c.owner == owner, getattr(r.c, end) == name, mention == alias)).tuples().all()
        for row_id, rel_id, source, target, kind in rows:
            source, target = (alias, target) if end == "source" else (source, alias)
            found = conn.execute(select(r.c.id).where(r.c.owner == owner, r.c.source == source, r.c.target == target,
                                                      r.c.relation_type == kind)).scalar()
            if found is None:
                found = conn.execute(insert(r).values(owner=owner, source=source, target=target,
                                                      relation_type=kind)).inserted_primary_key[0]
            move_evidence(conn, [row_id], "r", int(found))
            old.add(rel_id)
            moved += 1
    bare = old - _cited(conn, "r", old)
    if bare:
        conn.execute(delete(r).where(r.c.id.in_(sorted(bare))))
    return moved
