"""The re-embedding ledger in the SQL store: which records have vectors of which other profile."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlalchemy import Column, String, Table, delete, func, insert, select

from adapters.sql.code import SqlCode
from adapters.sql.documents import SqlDocuments
from adapters.sql.changes import SqlChangeLog
from adapters.sql.graph import SqlGraph
from adapters.sql.graph_builds import SqlGraphBuilds
from adapters.sql.graph_derived import SqlDerivedGraph
from adapters.sql.graph_follow import SqlGraphFollow
from adapters.sql.graph_events import SqlGraphEvents
from adapters.sql.tokens import SqlTokens
from adapters.sql.scopes import SqlScopedArtifacts
from adapters.sql.store import audit, metadata, put_meta, store_meta
from domain.model import EmbeddingProfile
from domain.ports import ReembedLedger

ledger = Table(
    "reembed_ledger", metadata,
    Column("profile_key", String(200), primary_key=True),
    Column("record_key", String(200), primary_key=True),
    Column("version", String(64), nullable=False),
)


class SqlStore(SqlCode, SqlGraphFollow, SqlChangeLog, SqlTokens, SqlDocuments, SqlGraph, SqlDerivedGraph, SqlGraphEvents, SqlGraphBuilds, SqlScopedArtifacts, ReembedLedger):
    """Every SQL-backed port memtrove has, over one engine."""

    def reembedded(self, profile_key: str) -> dict[str, str]:
        with self._read() as conn:
            rows = conn.execute(select(ledger.c.record_key, ledger.c.version)
                                .where(ledger.c.profile_key == profile_key)).tuples().all()
        return dict(rows)

    def mark_reembedded(self, profile_key: str, entries: Sequence[tuple[str, str]]) -> None:
        with self._write() as conn:
            for record_key, version in entries:
                conn.execute(delete(ledger).where(ledger.c.profile_key == profile_key,
                                                  ledger.c.record_key == record_key))
                conn.execute(insert(ledger).values(profile_key=profile_key, record_key=record_key, version=version))

    def mark_complete(self, profile: EmbeddingProfile, audit_seq: int) -> None:
        key = f"complete:{profile.key}"
        value = json.dumps({"provider": profile.provider, "model": profile.model, "dimensions": profile.dimensions,
                            "max_tokens": profile.max_tokens, "audit_seq": audit_seq})
        with self._write() as conn:
            put_meta(conn, key, value)

    def completed(self, profile_key: str) -> tuple[EmbeddingProfile, int] | None:
        with self._read() as conn:
            raw = conn.execute(select(store_meta.c.value).where(store_meta.c.key == f"complete:{profile_key}")).scalar()
        if not raw:
            return None
        data = json.loads(raw)
        seq = data.pop("audit_seq")
        return EmbeddingProfile(**data), int(seq)

    def last_audit_seq(self) -> int:
        with self._read() as conn:
            return int(conn.execute(select(func.max(audit.c.seq))).scalar() or 0)
