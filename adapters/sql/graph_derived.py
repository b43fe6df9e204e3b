"""The graph built from stored records, in the SQL store: each fact's evidence (the record it was read
from), the records read with their digests, merged names and build runs. A mixin of the SQL store,
beside sqlalchemy_graph.py (whose tables it points into by id)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Column, Index, Integer, String, Table, Text, delete, insert, select, update
from sqlalchemy.engine import Connection

from adapters.sql.base import metadata
from adapters.sql.graph import _parts, graph_entities, graph_observations, graph_relations
from adapters.sql.graph_events import forget_events, write_events
from adapters.sql.graph_records import lexical_of, unindex_entities
from domain.graph.extraction import UNKNOWN
from domain.graph.model import Derived, Evidence, Relation
from domain.model import AuditEntry
from domain.ports.graph import Origin

TOOL = "tool"  # the origin of a graph tool's write to a fact built from records: it stays when they go

graph_evidence = Table(
    "graph_evidence", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("owner", String(100), nullable=False),
    Column("fact_kind", String(1), nullable=False),  # e entity, o observation, r relation
    Column("fact_id", Integer, nullable=False),
    Column("origin_kind", String(10), nullable=False),
    Column("origin_id", String(200), nullable=False),
    Column("part", Integer, nullable=False, default=-1),
    Column("mention", String(1000), nullable=False, default=""),
    Column("target_mention", String(1000), nullable=True),
    Column("excerpt", Text, nullable=False, default=""),
    Column("valid_from", String(40), nullable=True),
    Index("ix_graph_evidence_origin", "origin_id", "origin_kind"),
    Index("ix_graph_evidence_fact", "fact_kind", "fact_id"),
)
graph_sources = Table(
    "graph_sources", metadata,
    Column("owner", String(100), primary_key=True),
    Column("origin_kind", String(10), primary_key=True),
    Column("origin_id", String(200), primary_key=True),
    Column("digest", String(64), nullable=False),
    Index("ix_graph_sources_origin", "origin_id"),
)


class SqlDerivedGraph:
    def source_digests(self, owner: str, origins: Sequence[Origin] | None = None) -> dict[Origin, str]:
        s = graph_sources
        query = select(s.c.origin_kind, s.c.origin_id, s.c.digest).where(s.c.owner == owner)
        with self._read() as conn:  # type: ignore[attr-defined]
            if origins is None:
                return {(k, i): d for k, i, d in conn.execute(query).tuples()}
            wanted, found = set(origins), {}
            for part in _parts(sorted({i for _, i in wanted})):
                found |= {(k, i): d for k, i, d in conn.execute(query.where(s.c.origin_id.in_(part))).tuples()
                          if (k, i) in wanted}
            return found

    def apply_sources(self, owner: str, items: Sequence[tuple[Origin, str, Derived]], entry: AuditEntry) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            for origin, digest, derived in items:
                _forget(conn, owner, [origin])
                _write_derived(conn, owner, origin, derived)
                conn.execute(insert(graph_sources).values(owner=owner, origin_kind=origin[0], origin_id=origin[1],
                                                          digest=digest))
                self._record_aliases(conn, owner, derived.aliases)  # type: ignore[attr-defined]
            self._append(conn, entry)  # type: ignore[attr-defined]

    def forget_sources(self, owner: str | None, origins: Sequence[Origin], entry: AuditEntry | None) -> int:
        with self._write() as conn:  # type: ignore[attr-defined]
            gone = _forget(conn, owner, origins)
            if entry is not None:
                self._append(conn, entry)  # type: ignore[attr-defined]
        return gone

    def evidence(self, owner: str, relations: Sequence[Relation]) -> dict[Relation, list[Evidence]]:
        r, ev = graph_relations, graph_evidence
        found: dict[Relation, list[Evidence]] = {}
        with self._read() as conn:  # type: ignore[attr-defined]
            for rel in dict.fromkeys(relations):
                rows = conn.execute(select(ev).join(r, (ev.c.fact_kind == "r") & (ev.c.fact_id == r.c.id)).where(
                    r.c.owner == owner, r.c.source == rel.source, r.c.target == rel.target,
                    r.c.relation_type == rel.relation_type, ev.c.origin_kind != TOOL).order_by(ev.c.id)).all()
                found[rel] = [_evidence(row) for row in rows]
        return found

    def linked_records(self, owner: str, names: Sequence[str], limit: int) -> list[tuple[str, Origin, int]]:
        e, ev = graph_entities, graph_evidence
        query = (select(e.c.name, ev.c.origin_kind, ev.c.origin_id, ev.c.part)
                 .join(ev, (ev.c.fact_kind == "e") & (ev.c.fact_id == e.c.id))
                 .where(e.c.owner == owner, e.c.name.in_(list(names)), ev.c.origin_kind != TOOL)
                 .order_by(ev.c.id.desc()).limit(limit))
        with self._read() as conn:  # type: ignore[attr-defined]
            return [(name, (kind, rid), part) for name, kind, rid, part in conn.execute(query).tuples()]

    def named_by(self, owner: str, origins: Sequence[Origin],
                 parts: Mapping[Origin, set[int]] | None = None) -> dict[Origin, list[str]]:
        e, ev = graph_entities, graph_evidence
        wanted = set(origins)
        found: dict[Origin, list[str]] = {}
        with self._read() as conn:  # type: ignore[attr-defined]
            for part in _parts(sorted({rid for _, rid in wanted})):
                for kind, rid, read, name in conn.execute(
                        select(ev.c.origin_kind, ev.c.origin_id, ev.c.part, e.c.name)
                        .join(e, (ev.c.fact_kind == "e") & (ev.c.fact_id == e.c.id))
                        .where(ev.c.owner == owner, ev.c.origin_id.in_(part)).order_by(ev.c.id)).tuples():
                    if (kind, rid) not in wanted or parts and (kind, rid) in parts and read not in parts[(kind, rid)]:
                        continue
                    if name not in found.setdefault((kind, rid), []):
                        found[(kind, rid)].append(name)
        return found

    def _deleted(self, conn: Connection, artifact_id: str) -> None:
        """An artifact deleted: what every owner's graph read from it goes, in the delete's transaction."""
        forget_records(conn, "artifact", [artifact_id])
        super()._deleted(conn, artifact_id)  # type: ignore[misc]

    def _keep_tool_write(self, conn: Connection, owner: str, kind: str, ids: Sequence[int]) -> None:
        """A graph tool wrote facts that records gave too: they stay when those records go."""
        ev = graph_evidence
        for part in _parts(list(ids)):
            derived = set(conn.execute(select(ev.c.fact_id).where(ev.c.fact_kind == kind, ev.c.fact_id.in_(part))
                                       ).scalars())
            held = set(conn.execute(select(ev.c.fact_id).where(ev.c.fact_kind == kind, ev.c.fact_id.in_(part),
                                                               ev.c.origin_kind == TOOL)).scalars())
            if derived - held:
                conn.execute(insert(ev), [{"owner": owner, "fact_kind": kind, "fact_id": i, "origin_kind": TOOL,
                                           "origin_id": "", "part": -1, "mention": "", "excerpt": ""}
                                          for i in sorted(derived - held)])

    @staticmethod
    def _drop_evidence(conn: Connection, kind: str, ids: Sequence[int]) -> None:
        for part in _parts(list(ids)):
            conn.execute(delete(graph_evidence).where(graph_evidence.c.fact_kind == kind,
                                                      graph_evidence.c.fact_id.in_(part)))


def _evidence(row: object) -> Evidence:
    return Evidence(row.origin_kind, row.origin_id, row.part, row.mention, row.excerpt,  # type: ignore[attr-defined]
                    row.valid_from)  # type: ignore[attr-defined]


def _entity_id(conn: Connection, owner: str, name: str, entity_type: str) -> int:
    """The entity's id, made when missing; a type read with confidence replaces "unknown"."""
    e = graph_entities
    found = conn.execute(select(e.c.id, e.c.entity_type).where(e.c.owner == owner, e.c.name == name)).first()
    if found is not None:
        if found.entity_type == UNKNOWN and entity_type != UNKNOWN:
            conn.execute(update(e).where(e.c.id == found.id).values(entity_type=entity_type))
        return int(found.id)
    return int(conn.execute(insert(e).values(owner=owner, name=name, entity_type=entity_type)).inserted_primary_key[0])


def _write_derived(conn: Connection, owner: str, origin: Origin, derived: Derived) -> None:
    o, r = graph_observations, graph_relations
    e = graph_entities
    held = set(conn.execute(select(e.c.id).where(e.c.owner == owner, e.c.name.in_(
        [entity.name for entity in derived.entities]))).scalars()) if derived.entities else set()
    ids = {entity.name: _entity_id(conn, owner, entity.name, entity.entity_type) for entity in derived.entities}
    rows: list[dict] = []
    before: dict[str, set[int]] = {"e": held & set(ids.values()), "o": set(), "r": set()}  # facts there already

    def cite(kind: str, fact_id: int, evidence: Evidence, target_mention: str | None = None) -> None:
        rows.append({"owner": owner, "fact_kind": kind, "fact_id": fact_id, "origin_kind": origin[0],
                     "origin_id": origin[1], "part": evidence.part, "mention": evidence.mention[:1000],
                     "target_mention": target_mention, "excerpt": evidence.excerpt, "valid_from": evidence.when})

    for name, evidence in derived.mentions:
        cite("e", ids[name], evidence)
    for name, text, evidence in derived.observations:
        found = conn.execute(select(o.c.id).where(o.c.entity_id == ids[name], o.c.content == text)).scalar()
        if found is None:
            found = conn.execute(insert(o).values(entity_id=ids[name], content=text)).inserted_primary_key[0]
        else:
            before["o"].add(int(found))
        cite("o", int(found), evidence)
    for rel, evidence, target_mention in derived.relations:
        found = conn.execute(select(r.c.id).where(r.c.owner == owner, r.c.source == rel.source,
                                                  r.c.target == rel.target,
                                                  r.c.relation_type == rel.relation_type)).scalar()
        if found is None:
            found = conn.execute(insert(r).values(owner=owner, source=rel.source, target=rel.target,
                                                  relation_type=rel.relation_type)).inserted_primary_key[0]
        else:
            before["r"].add(int(found))
        cite("r", int(found), evidence, target_mention)
    # A fact there already that no record gave was written by a graph tool: it is the caller's, and stays
    # when the records read now go (as one the tool writes after a build: SqlDerivedGraph._keep_tool_write).
    tool = [{"owner": owner, "fact_kind": kind, "fact_id": i, "origin_kind": TOOL, "origin_id": "", "part": -1,
             "mention": "", "excerpt": ""} for kind, found in before.items() for i in sorted(found - _cited(conn, kind, found))]
    if tool:
        conn.execute(insert(graph_evidence), tool)
    if rows:
        conn.execute(insert(graph_evidence), rows)
    write_events(conn, owner, derived.events)


def forget_records(conn: Connection, kind: str, ids: Sequence[str]) -> None:
    """In a delete's transaction: what every owner's graph read from those records goes with them."""
    _forget(conn, None, [(kind, i) for i in ids])


def _forget(conn: Connection, owner: str | None, origins: Sequence[Origin]) -> int:
    """Drop the evidence those records gave, then each fact left without any; the records' digests."""
    ev, s = graph_evidence, graph_sources
    wanted = set(origins)
    forget_events(conn, owner, wanted)
    facts: dict[str, set[int]] = {"e": set(), "o": set(), "r": set()}
    evidence_ids: list[int] = []
    for part in _parts(sorted({rid for _, rid in wanted})):
        query = select(ev.c.id, ev.c.fact_kind, ev.c.fact_id, ev.c.origin_kind, ev.c.origin_id).where(
            ev.c.origin_id.in_(part))
        for row_id, kind, fact_id, origin_kind, origin_id in conn.execute(
                query.where(ev.c.owner == owner) if owner is not None else query).tuples():
            if (origin_kind, origin_id) in wanted:
                evidence_ids.append(row_id)
                facts[kind].add(fact_id)
    for part in _parts(evidence_ids):
        conn.execute(delete(ev).where(ev.c.id.in_(part)))
    bare = {kind: sorted(ids - _cited(conn, kind, ids)) for kind, ids in facts.items()}
    for part in _parts(bare["r"]):
        conn.execute(delete(graph_relations).where(graph_relations.c.id.in_(part)))
    for part in _parts(bare["o"]):
        conn.execute(delete(graph_observations).where(graph_observations.c.id.in_(part)))
    for part in _parts(bare["e"]):  # defensive: an entity with a record is a tool's, which records never take
        for gone_owner, names in _names(conn, part).items():
            unindex_entities(conn, lexical_of(conn), gone_owner, names)
    for part in _parts(bare["e"]):
        kept = set(conn.execute(select(graph_observations.c.id).where(graph_observations.c.entity_id.in_(part))
                                ).scalars())
        if kept:
            conn.execute(delete(ev).where(ev.c.fact_kind == "o", ev.c.fact_id.in_(list(kept))))
            conn.execute(delete(graph_observations).where(graph_observations.c.id.in_(list(kept))))
        conn.execute(delete(graph_entities).where(graph_entities.c.id.in_(part)))
    gone = 0
    for kind, rid in wanted:
        where = [s.c.origin_kind == kind, s.c.origin_id == rid] + ([s.c.owner == owner] if owner is not None else [])
        gone += conn.execute(delete(s).where(*where)).rowcount or 0
    return gone


def _names(conn: Connection, ids: Sequence[int]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for owner, name in conn.execute(select(graph_entities.c.owner, graph_entities.c.name).where(
            graph_entities.c.id.in_(list(ids)))).tuples():
        found.setdefault(owner, []).append(name)
    return found


def _cited(conn: Connection, kind: str, ids: set[int]) -> set[int]:
    ev = graph_evidence
    return {i for part in _parts(sorted(ids)) for i in conn.execute(
        select(ev.c.fact_id).where(ev.c.fact_kind == kind, ev.c.fact_id.in_(part))).scalars()} if ids else set()


def move_evidence(conn: Connection, ids: Sequence[int], kind: str, fact_id: int) -> None:
    for part in _parts(list(ids)):
        conn.execute(update(graph_evidence).where(graph_evidence.c.id.in_(part)).values(fact_kind=kind,
                                                                                       fact_id=fact_id))


