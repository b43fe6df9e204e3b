"""Spec 004's project documents in the SQL store: every version of every item, and durable idempotency
keys shared by every replica of one database.

A mixin for the SQL store: it uses ``self._engine``, ``self._write()`` and ``self._read()`` of
SqlMetadataStore (whose ``_write`` serialises this process's writers on SQLite and turns SQLAlchemy's
errors into StorageError). Its tables join the shared MetaData, created when the store starts.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import (Boolean, Column, Connection, Float, Index, Integer, String, Table, Text, delete, func, insert,
                        false, inspect, select, text, update)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from adapters.sql.base import metadata
from domain.errors import StorageError
from domain.ports.documents import DocumentStore, ItemVersion, KeyedResult
from domain.validation import epoch

CLAIM_LEASE_SECONDS = 300.0  # a claim still without a result this long after it was taken: its caller died
APPEND_ATTEMPTS = 8  # a version number taken by a concurrent append (another replica): allocate again
_APPEND_LOCK_CLASS = 0x6D74_6476  # advisory lock class of item appends (two-key form: its own key space)

item_versions = Table(
    "item_versions", metadata,
    Column("project", String(100), primary_key=True),
    Column("item_id", String(100), primary_key=True),
    Column("version_num", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(32), nullable=False),
    Column("title", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", String(128), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("created_epoch", Float, nullable=False),
    Column("canonical_key", String(255)),
    Column("doc_class", String(64)),
    Column("tags", Text, nullable=False),  # a JSON list
    Column("pinned", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("session_id", String(200)),
    Column("meta", Text, nullable=False),  # a JSON object
    Column("projected", Boolean, nullable=False, server_default=false()),  # its artifact was written
    Index("ix_item_versions_canonical", "project", "canonical_key"),
    Index("ix_item_versions_unprojected", "projected", "created_epoch"),
    Index("ix_item_versions_item", "project", "item_id"),
)

idempotency_keys = Table(
    "idempotency_keys", metadata,
    Column("project", String(100), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("tool", String(64), nullable=False),
    Column("payload_hash", String(128), nullable=False),
    Column("result", Text),  # JSON; NULL while the first call is under way
    Column("claimed_at", Float, nullable=False),
)


def _version(row: Any) -> ItemVersion:
    return ItemVersion(
        project=row["project"], item_id=row["item_id"], version_num=int(row["version_num"]), kind=row["kind"],
        title=row["title"], content=row["content"], content_hash=row["content_hash"], created_at=row["created_at"],
        canonical_key=row["canonical_key"], doc_class=row["doc_class"], tags=tuple(json.loads(row["tags"])),
        pinned=bool(row["pinned"]), status=row["status"], session_id=row["session_id"], meta=json.loads(row["meta"]))


def _keyed(row: Any) -> KeyedResult:
    return KeyedResult(key=row["key"], tool=row["tool"], payload_hash=row["payload_hash"],
                       result=None if row["result"] is None else json.loads(row["result"]),
                       claimed_at=float(row["claimed_at"]))


def _conflict(exc: StorageError) -> bool:
    return isinstance(exc.__cause__, IntegrityError)


class SqlDocuments(DocumentStore):
    """Item versions and idempotency keys over the store's engine (SQLite or PostgreSQL)."""

    claim_lease = CLAIM_LEASE_SECONDS

    def _migrate(self, conn: Connection) -> None:
        """Columns added since a store was created: item_versions.projected (rows from before it are
        looked at once by the background projection, which finds their artifacts unchanged)."""
        super()._migrate(conn)  # type: ignore[misc]
        if "projected" not in {c["name"] for c in inspect(conn).get_columns("item_versions")}:
            conn.execute(text("ALTER TABLE item_versions ADD COLUMN projected BOOLEAN NOT NULL DEFAULT FALSE"))
        conn.execute(text("CREATE INDEX IF NOT EXISTS ix_item_versions_unprojected "
                          "ON item_versions (projected, created_epoch)"))

    # --- item versions -------------------------------------------------------------------------

    def add_version(self, version: ItemVersion) -> ItemVersion:
        for attempt in range(APPEND_ATTEMPTS):
            try:
                with self._write() as conn:
                    return self._append_version(conn, version)
            except StorageError as exc:
                # Only reachable when another writer took the number between our read and insert.
                if not _conflict(exc) or attempt == APPEND_ATTEMPTS - 1:
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _append_version(conn: Connection, version: ItemVersion) -> ItemVersion:
        where = (item_versions.c.project == version.project, item_versions.c.item_id == version.item_id)
        if conn.dialect.name == "postgresql":
            # Replicas appending to one item queue here (released at commit) instead of colliding.
            conn.execute(text(f"SELECT pg_advisory_xact_lock({_APPEND_LOCK_CLASS}, hashtext(:item))"),
                         {"item": f"{version.project}\x1f{version.item_id}"})
        last = conn.execute(select(func.max(item_versions.c.version_num)).where(*where)).scalar()
        stored = replace(version, version_num=int(last or 0) + 1, tags=tuple(version.tags),
                         meta=json.loads(json.dumps(version.meta)))
        conn.execute(insert(item_versions).values(
            project=stored.project, item_id=stored.item_id, version_num=stored.version_num, kind=stored.kind,
            title=stored.title, content=stored.content, content_hash=stored.content_hash,
            created_at=stored.created_at, created_epoch=epoch(stored.created_at, "created_at"),
            canonical_key=stored.canonical_key, doc_class=stored.doc_class,
            tags=json.dumps(list(stored.tags), ensure_ascii=False), pinned=bool(stored.pinned),
            status=stored.status, session_id=stored.session_id,
            meta=json.dumps(stored.meta, ensure_ascii=False, sort_keys=True), projected=False))
        return stored

    def mark_projected(self, project: str, item_id: str, version_num: int) -> None:
        with self._write() as conn:
            conn.execute(update(item_versions).where(
                item_versions.c.project == project, item_versions.c.item_id == item_id,
                item_versions.c.version_num <= version_num, item_versions.c.projected.is_(False)).values(projected=True))

    def unprojected(self, before: float, limit: int = 50) -> list[ItemVersion]:
        query = (select(item_versions).where(item_versions.c.projected.is_(False),
                                             item_versions.c.created_epoch <= before)
                 .order_by(item_versions.c.created_epoch, item_versions.c.project, item_versions.c.item_id,
                           item_versions.c.version_num).limit(max(0, limit)))
        with self._read() as conn:
            return [_version(row) for row in conn.execute(query).mappings()]

    def item_version(self, project: str, item_id: str, version_num: int | None = None) -> ItemVersion | None:
        query = select(item_versions).where(item_versions.c.project == project, item_versions.c.item_id == item_id)
        if version_num is None:
            query = query.order_by(item_versions.c.version_num.desc()).limit(1)
        else:
            query = query.where(item_versions.c.version_num == version_num)
        with self._read() as conn:
            row = conn.execute(query).mappings().first()
        return _version(row) if row else None

    def item_versions(self, project: str, item_id: str) -> list[ItemVersion]:
        query = (select(item_versions).where(item_versions.c.project == project, item_versions.c.item_id == item_id)
                 .order_by(item_versions.c.version_num))
        with self._read() as conn:
            return [_version(row) for row in conn.execute(query).mappings()]

    def versions_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[ItemVersion]:
        v = item_versions
        query = select(v).order_by(v.c.project, v.c.item_id, v.c.version_num).limit(max(0, limit))
        if after is not None:
            project, item_id, number = after
            query = query.where((v.c.project > project) | ((v.c.project == project) & (
                (v.c.item_id > item_id) | ((v.c.item_id == item_id) & (v.c.version_num > number)))))
        with self._read() as conn:
            return [_version(row) for row in conn.execute(query).mappings()]

    def canonical_item(self, project: str, canonical_key: str) -> str | None:
        # Should two items ever hold one key, the first created is the canonical one (a stable answer).
        query = (select(item_versions.c.item_id)
                 .where(item_versions.c.project == project, item_versions.c.canonical_key == canonical_key)
                 .order_by(item_versions.c.created_epoch, item_versions.c.item_id, item_versions.c.version_num)
                 .limit(1))
        with self._read() as conn:
            return conn.execute(query).scalar()

    def latest_items(self, project: str, kinds: Sequence[str] | None = None, include_archived: bool = False,
                     pinned_only: bool = False, since: str | None = None, session_id: str | None = None,
                     limit: int = 100) -> list[ItemVersion]:
        v = item_versions
        newest = (select(v.c.item_id, func.max(v.c.version_num).label("newest"))
                  .where(v.c.project == project).group_by(v.c.item_id).subquery())
        query = (select(v).join(newest, (v.c.item_id == newest.c.item_id) & (v.c.version_num == newest.c.newest))
                 .where(v.c.project == project))
        if kinds:
            query = query.where(v.c.kind.in_(list(kinds)))
        if not include_archived:
            query = query.where(v.c.status != "archived")
        if pinned_only:
            query = query.where(v.c.pinned.is_(True))
        if since is not None:
            query = query.where(v.c.created_epoch >= epoch(since, "since"))
        if session_id is not None:
            query = query.where(v.c.session_id == session_id)
        query = query.order_by(v.c.pinned.desc(), v.c.created_epoch.desc(), v.c.item_id).limit(max(0, limit))
        with self._read() as conn:
            return [_version(row) for row in conn.execute(query).mappings()]

    # --- idempotency keys ----------------------------------------------------------------------

    def claim_key(self, project: str, key: str, tool: str, payload_hash: str, now: float) -> KeyedResult | None:
        where = (idempotency_keys.c.project == project, idempotency_keys.c.key == key)
        dialect = postgresql if self._engine.dialect.name == "postgresql" else sqlite
        claim = (dialect.insert(idempotency_keys)
                 .values(project=project, key=key, tool=tool, payload_hash=payload_hash, result=None, claimed_at=now)
                 .on_conflict_do_nothing(index_elements=[idempotency_keys.c.project, idempotency_keys.c.key])
                 .returning(idempotency_keys.c.claimed_at))  # a row back only when this statement inserted
        for _ in range(APPEND_ATTEMPTS):
            with self._write() as conn:
                if conn.execute(claim).first() is not None:
                    return None  # this statement inserted the row: the key is ours
                row = conn.execute(select(idempotency_keys).where(*where)).mappings().first()
                if row is None:
                    continue  # released between the insert and the read: claim again
                held = _keyed(row)
                if held.result is not None or held.claimed_at > now - self.claim_lease:
                    return held
                # A stale claim (its caller died): take it over, unless another caller just did.
                taken = conn.execute(update(idempotency_keys).where(
                    *where, idempotency_keys.c.result.is_(None), idempotency_keys.c.claimed_at == held.claimed_at)
                    .values(tool=tool, payload_hash=payload_hash, claimed_at=now)
                    .returning(idempotency_keys.c.claimed_at)).first()
                if taken is not None:
                    return None
                row = conn.execute(select(idempotency_keys).where(*where)).mappings().first()
                if row is not None:
                    return _keyed(row)
        raise StorageError(f"Failed to claim the idempotency key {key!r}: it kept changing under this call")

    def finish_key(self, project: str, key: str, result: dict[str, Any], claimed_at: float | None = None) -> bool:
        mine = [idempotency_keys.c.project == project, idempotency_keys.c.key == key]
        if claimed_at is not None:  # fenced: only while this claim holds the key
            mine += [idempotency_keys.c.claimed_at == claimed_at, idempotency_keys.c.result.is_(None)]
        with self._write() as conn:
            done = conn.execute(update(idempotency_keys).where(*mine)
                                .values(result=json.dumps(result, ensure_ascii=False))).rowcount
        return bool(done)

    def renew_key(self, project: str, key: str, claimed_at: float, now: float) -> bool:
        with self._write() as conn:
            renewed = conn.execute(update(idempotency_keys).where(
                idempotency_keys.c.project == project, idempotency_keys.c.key == key,
                idempotency_keys.c.result.is_(None), idempotency_keys.c.claimed_at == claimed_at)
                .values(claimed_at=now)).rowcount
        return bool(renewed)

    def release_key(self, project: str, key: str, claimed_at: float | None = None) -> None:
        # Only a claim still under way is given up: a finished key keeps its result.
        mine = [idempotency_keys.c.project == project, idempotency_keys.c.key == key,
                idempotency_keys.c.result.is_(None)]
        if claimed_at is not None:
            mine.append(idempotency_keys.c.claimed_at == claimed_at)
        with self._write() as conn:
            conn.execute(delete(idempotency_keys).where(*mine))
