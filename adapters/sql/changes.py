"""The change log in the SQL store: a row per item each audited write touches, written with the audit
entry in the write's transaction (this mixin's ``_append`` comes before the store's in the order of
bases). The item's scope and access fields are read from its row in that transaction; a deleted item's
from its last change. Append-only: nothing updates or deletes a row (PostgreSQL's logical decoding of
this table, or memory_changes' cursor, streams it out)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Float, Index, Integer, String, Table, Text, insert, select
from sqlalchemy.engine import Connection

from adapters.sql.artifact_rows import COMMITTED, artifacts
from adapters.sql.base import metadata
from adapters.sql.tables import memories, turns
from domain.access.rules import NEVER
from domain.changes.model import Change, changes_of
from domain.model import AuditEntry
from domain.validation import epoch

changes = Table(
    "changes", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("ts", String(40), nullable=False),
    Column("ts_epoch", Float, nullable=False),
    Column("kind", String(12), nullable=False),
    Column("collection", String(12), nullable=False),
    Column("item_id", String(1000), nullable=False),
    Column("actor", String(100), nullable=False),
    Column("conversation_id", String(100), nullable=True),
    Column("source", String(100), nullable=True),
    Column("access", Text, nullable=False),
    Column("detail", Text, nullable=False),
    Index("ix_changes_time", "ts_epoch", "seq"),
    Index("ix_changes_item", "item_id", "seq"),
)


class SqlChangeLog:
    def _append(self, conn: Connection, entry: AuditEntry) -> None:
        super()._append(conn, entry)  # type: ignore[misc]
        rows = [_row(conn, entry, kind, collection, item_id, detail)
                for kind, collection, item_id, detail in changes_of(entry)]
        if rows:
            conn.execute(insert(changes), rows)

    def changes(self, since: float | None, until: float | None, after: tuple[float, int] | None = None, limit: int = 100,
                kinds: Sequence[str] | None = None, collections: Sequence[str] | None = None,
                conversation_id: str | None = None, source: str | None = None,
                item_ids: Sequence[str] | None = None) -> list[Change]:
        c = changes.c
        query = select(changes).order_by(c.ts_epoch, c.seq).limit(limit)  # the time index's order: a range scan
        if after is not None:
            query = query.where((c.ts_epoch > after[0]) | ((c.ts_epoch == after[0]) & (c.seq > after[1])))
        for column, value in ((c.kind, kinds), (c.collection, collections), (c.item_id, item_ids)):
            query = query.where(column.in_(list(value))) if value is not None else query
        query = query.where(c.ts_epoch >= since) if since is not None else query
        query = query.where(c.ts_epoch <= until) if until is not None else query
        query = query.where(c.conversation_id == conversation_id) if conversation_id is not None else query
        query = query.where(c.source == source) if source is not None else query
        with self._read() as conn:  # type: ignore[attr-defined]
            return [Change(r.seq, r.ts, r.ts_epoch, r.kind, r.collection, r.item_id, r.actor, r.conversation_id, r.source,
                           json.loads(r.access), json.loads(r.detail)) for r in conn.execute(query)]


def _row(conn: Connection, entry: AuditEntry, kind: str, collection: str, item_id: str,
         detail: dict[str, Any]) -> dict[str, Any]:
    scope, access = _scope(conn, collection, item_id, entry.actor)
    return {"ts": entry.ts, "ts_epoch": epoch(entry.ts), "kind": kind, "collection": collection,
            "item_id": item_id[:1000], "actor": entry.actor, **scope, "access": json.dumps(access),
            "detail": json.dumps(detail, sort_keys=True)}


def _scope(conn: Connection, collection: str, item_id: str, actor: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The item's (conversation, source) and access fields now; a gone item's from its last change."""
    row = None
    if collection == "memory":
        row = conn.execute(select(memories.c.conversation_id, memories.c.acl, memories.c.sensitivity,
                                  memories.c.expires_epoch).where(memories.c.id == item_id)).first()
    elif collection == "turn":
        row = conn.execute(select(turns.c.conversation_id, turns.c.acl, turns.c.sensitivity,
                                  turns.c.expires_epoch).where(turns.c.id == item_id)).first()
    elif collection == "artifact":
        a = artifacts.c
        found = conn.execute(select(a.source_system, a.acl, a.sensitivity, a.expires_epoch).where(
            a.artifact_id == item_id, a.status == COMMITTED)).first()
        if found is not None:
            return {"conversation_id": None, "source": found[0]}, _access(found[1], found[2], found[3])
    else:  # the caller's own graph: its own changes
        return {"conversation_id": None, "source": None}, _access(json.dumps([f"u:{actor}"]), "normal", None)
    if row is not None:
        return {"conversation_id": row[0], "source": None}, _access(row[1], row[2], row[3])
    last = conn.execute(select(changes.c.conversation_id, changes.c.source, changes.c.access).where(
        changes.c.item_id == item_id, changes.c.collection == collection).order_by(changes.c.seq.desc())).first()
    if last is not None:
        return {"conversation_id": last[0], "source": last[1]}, json.loads(last[2])
    return {"conversation_id": None, "source": None}, _access(json.dumps([f"u:{actor}"]), "normal", None)


def _access(acl: str, sensitivity: str, expires: float | None) -> dict[str, Any]:
    return {"acl": json.loads(acl), "sensitivity": sensitivity, "expires_epoch": NEVER if expires is None else expires}
