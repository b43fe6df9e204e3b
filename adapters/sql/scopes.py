"""Artifacts filed by scope (labels in their JSON column), their reads, and the store's figures."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Connection, Integer, String, Table, and_, delete, func, select, text
from sqlalchemy.dialects import postgresql, sqlite

from adapters.lexical.fts import acl_condition, label_condition
from adapters.sql.artifact_rows import COMMITTED, artifacts, chunks, row_artifact
from adapters.sql.artifacts import SqlArtifactStore
from adapters.sql.base import metadata
from adapters.sql.tables import memories, turns
from domain.model import TAG_PREFIX, Artifact
from domain.access.rules import ACL_PREFIX
from domain.ports import ArtifactScopes, Filter
from domain.validation import epoch, iso

access = Table(
    "artifact_access", metadata,
    Column("artifact_id", String(40), primary_key=True),
    Column("accessed_at", String(40), nullable=False),
    Column("access_count", Integer, nullable=False),
)


class SqlScopedArtifacts(SqlArtifactStore, ArtifactScopes):
    def list_artifacts(self, source_system: str, labels: Mapping[str, str], limit: int, newest_first: bool = True,
                       before: str | None = None) -> list[Artifact]:
        dialect = self._engine.dialect.name
        conditions = [f"a.status = '{COMMITTED}'", "a.source_system = :source"]
        params: dict[str, object] = {"source": source_system, "limit": limit}
        for n, (name, value) in enumerate(sorted(labels.items())):
            conditions.append(label_condition(name, f"l{n}", dialect, row="a"))
            params[f"l{n}"] = name.removeprefix(TAG_PREFIX) if name.startswith(TAG_PREFIX) else value
        if before is not None:
            conditions.append("a.ts_epoch < :before")
            params["before"] = epoch(before)
        order = "DESC" if newest_first else "ASC"
        iter_order = ("CAST(a.labels AS jsonb) ->> 'iter_order'" if dialect == "postgresql"
                      else "json_extract(a.labels, '$.iter_order')")
        query = text(f"SELECT a.artifact_id FROM artifacts a WHERE {' AND '.join(conditions)} "
                     f"ORDER BY COALESCE({iter_order}, '') {order}, a.ts_epoch {order}, a.artifact_id {order} "
                     "LIMIT :limit")
        with self._read() as conn:
            ids = [row[0] for row in conn.execute(query, params)]
            found: dict[str, Artifact] = {}
            for start in range(0, len(ids), 5_000):  # bound the parameters of one statement
                rows = conn.execute(select(artifacts).where(artifacts.c.artifact_id.in_(ids[start:start + 5_000]),
                                                            artifacts.c.status == COMMITTED)).mappings().all()
                found.update({row["artifact_id"]: row_artifact(row) for row in rows})
        return [found[i] for i in ids if i in found]

    def record_access(self, artifact_id: str, ts: str) -> tuple[str, int] | None:
        with self._write() as conn:
            known = conn.execute(select(artifacts.c.artifact_id).where(
                artifacts.c.artifact_id == artifact_id, artifacts.c.status == COMMITTED)).first()
            if known is None:
                return None
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            conn.execute(dialect.insert(access).values(artifact_id=artifact_id, accessed_at=ts, access_count=1)
                         .on_conflict_do_update(index_elements=[access.c.artifact_id],
                                                set_={"accessed_at": ts, "access_count": access.c.access_count + 1}))
            row = conn.execute(select(access.c.accessed_at, access.c.access_count)
                               .where(access.c.artifact_id == artifact_id)).one()
        return row.accessed_at, int(row.access_count)

    def accesses(self, ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(select(access).where(access.c.artifact_id.in_(list(ids)))).all()
        return {row.artifact_id: (row.accessed_at, int(row.access_count)) for row in rows}

    def artifact_counts(self, source_system: str | None = None, rule: Filter | None = None) -> tuple[int, int]:
        scope = and_(artifacts.c.status == COMMITTED, *_rule_conditions(rule, self._engine.dialect.name))
        if source_system:
            scope = and_(scope, artifacts.c.source_system == source_system)
        with self._read() as conn:
            count = conn.execute(select(func.count()).select_from(artifacts).where(scope)).scalar() or 0
            parts = conn.execute(select(func.count()).select_from(chunks.join(artifacts, and_(
                chunks.c.artifact_id == artifacts.c.artifact_id, chunks.c.version == artifacts.c.version)))
                .where(scope)).scalar() or 0
        return int(count), int(parts)

    def storage_bytes(self) -> int:
        if self._engine.dialect.name == "postgresql":
            with self._read() as conn:
                return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar() or 0)
        database = self._engine.url.database
        if not database or database == ":memory:":
            return 0
        return sum(os.path.getsize(f) for f in (database, f"{database}-wal", f"{database}-shm") if Path(f).exists())

    def find_artifacts(self, where: Mapping[str, str], rule: Filter | None, limit: int,
                       before: tuple[float, str] | None = None) -> list[Artifact]:
        a = artifacts.c
        query = select(artifacts).where(a.status == COMMITTED, *_rule_conditions(rule, self._engine.dialect.name))
        for name in ("source_system", "artifact_type", "owner"):
            if where.get(name):
                query = query.where(a[name] == where[name])
        if where.get("source_id_prefix"):
            prefix = where["source_id_prefix"]
            query = query.where(func.substr(a.source_id, 1, len(prefix)) == prefix)
        if before is not None:
            query = query.where((a.ts_epoch < before[0]) | ((a.ts_epoch == before[0]) & (a.artifact_id < before[1])))
        query = query.order_by(a.ts_epoch.desc(), a.artifact_id.desc()).limit(limit)
        with self._read() as conn:
            return [row_artifact(row) for row in conn.execute(query).mappings()]

    def tallies(self, rule: Filter | None) -> dict[str, Any]:
        dialect = self._engine.dialect.name
        kept = {name: _rule_conditions(rule, dialect, table) for name, table in
                (("artifacts", artifacts), ("memories", memories), ("turns", turns))}
        committed = and_(artifacts.c.status == COMMITTED, *kept["artifacts"])
        with self._read() as conn:
            by_type = dict(conn.execute(select(memories.c.type, func.count()).where(*kept["memories"])
                                        .group_by(memories.c.type)).tuples().all())
            turn_count = conn.execute(select(func.count()).select_from(turns).where(*kept["turns"])).scalar()
            # A conversation id is each owner's own: conversations are counted by (owner, id).
            conversations = conn.execute(select(func.count()).select_from(
                select(turns.c.owner, turns.c.conversation_id).where(*kept["turns"]).distinct().subquery())).scalar()
            kinds = dict(conn.execute(select(artifacts.c.artifact_type, func.count()).where(committed)
                                      .group_by(artifacts.c.artifact_type)).tuples().all())
            sources = dict(conn.execute(select(artifacts.c.source_system, func.count()).where(committed)
                                        .group_by(artifacts.c.source_system)).tuples().all())
            parts = conn.execute(select(func.count()).select_from(chunks.join(artifacts, and_(
                chunks.c.artifact_id == artifacts.c.artifact_id, chunks.c.version == artifacts.c.version)))
                .where(committed)).scalar() or 0
            spans = [conn.execute(select(func.min(t.c.ts_epoch), func.max(t.c.ts_epoch)).where(*conditions)).one()
                     for t, conditions in ((artifacts, [committed]), (memories, kept["memories"]),
                                           (turns, kept["turns"]))]
        lows = [low for low, _ in spans if low is not None]
        highs = [high for _, high in spans if high is not None]
        return {"memories": {k: int(v) for k, v in sorted(by_type.items())}, "turns": int(turn_count),
                "conversations": int(conversations), "chunks": int(parts),
                "artifacts": {"by_type": {k: int(v) for k, v in sorted(kinds.items())},
                              "by_source": {k: int(v) for k, v in sorted(sources.items())}},
                "oldest": iso(min(lows)) if lows else None, "newest": iso(max(highs)) if highs else None}

    def _deleted(self, conn: Connection, artifact_id: str) -> None:
        conn.execute(delete(access).where(access.c.artifact_id == artifact_id))


def _rule_conditions(rule: Filter | None, dialect: str, table: Table = artifacts) -> list[Any]:
    """An access rule (access_filter's shape) as conditions on ``table`` (one with the access columns)."""
    if not rule:
        return []
    keys = {k[len(ACL_PREFIX):]: f"acl{n}" for n, clause in enumerate(rule["$or"]) for k in clause}
    conditions: list[Any] = [text(acl_condition(list(keys.values()), dialect, row=table.name)).bindparams(
        **{param: key for key, param in keys.items()})]
    if "sensitivity" in rule:
        conditions.append(table.c.sensitivity.in_(list(rule["sensitivity"]["$in"])))
    if "expires_epoch" in rule:
        conditions.append(table.c.expires_epoch > rule["expires_epoch"]["$gt"])
    return conditions
