"""Bearer tokens in the SQL store: the hash of each secret and the principal it names (TokenStore).

A mixin for the SQL store: it uses ``self._write()`` and ``self._read()`` of SqlMetadataStore (whose
``_write`` serialises this process's writers on SQLite and turns SQLAlchemy's errors into StorageError).
Its table joins the shared MetaData, created when the store starts.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import Column, Connection, String, Table, Text, inspect, insert, select, text, update

from adapters.sql.base import metadata
from adapters.sql.tables import put_meta, store_meta
from domain.access.principal import Principal
from domain.common import utc_now
from domain.ports.identity import TokenInfo, TokenStore

api_tokens = Table(
    "api_tokens", metadata,
    Column("token_id", String(40), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),  # sha256 hex; unique: indexed
    Column("user_id", String(100), nullable=False),
    Column("teams", Text, nullable=False),  # a JSON list, in the principal's order
    Column("org", String(100)),
    Column("clearance", String(20), nullable=False),
    Column("projects", Text),  # a JSON list; NULL: every project
    Column("label", String(200)),
    Column("created_at", String(40), nullable=False),
    Column("revoked_at", String(40)),
    Column("narrowed_at", String(40)),  # when the upgrade to least privilege took its every-project access
)
NARROWED = "token_projects"  # store_meta: the upgrade that narrowed project-less tokens ran (its time)

_PRINCIPAL_COLUMNS = {"user_id": "VARCHAR(100)", "teams": "TEXT", "org": "VARCHAR(100)", "clearance": "VARCHAR(20)",
                      "projects": "TEXT"}


def principal_columns(principal: Principal) -> dict[str, Any]:
    return {"user_id": principal.user_id, "teams": json.dumps(list(principal.teams)), "org": principal.org,
            "clearance": principal.clearance,
            "projects": None if principal.projects is None else json.dumps(list(principal.projects))}


log = logging.getLogger(__name__)


def principal_of(row: Any) -> Principal:
    projects = row["projects"]
    return Principal(row["user_id"], tuple(json.loads(row["teams"])), row["org"], row["clearance"],
                     None if projects is None else tuple(json.loads(projects)))


class SqlTokens(TokenStore):
    """Tokens over the store's engine (SQLite or PostgreSQL)."""

    def _migrate(self, conn: Connection) -> None:
        """A table of an earlier shape (one JSON ``principal`` column) gets a column per field, its
        tokens kept. Each step looks first: a migration that stopped halfway (SQLite may commit DDL on
        its own) finishes on the next start."""
        super()._migrate(conn)  # type: ignore[misc]
        columns = {c["name"] for c in inspect(conn).get_columns("api_tokens")}
        if "principal" in columns:
            self._split_principal(conn, columns)
        if "narrowed_at" not in columns:
            conn.execute(text("ALTER TABLE api_tokens ADD COLUMN narrowed_at VARCHAR(40)"))
        narrow_projectless(conn)

    @staticmethod
    def _split_principal(conn: Connection, columns: set[str]) -> None:
        for name, kind in _PRINCIPAL_COLUMNS.items():
            if name not in columns:
                conn.execute(text(f"ALTER TABLE api_tokens ADD COLUMN {name} {kind}"))
        rows = conn.execute(text("SELECT token_id, principal FROM api_tokens WHERE user_id IS NULL")).all()
        for token_id, raw in rows:
            data = json.loads(raw)
            principal = Principal(data["user_id"], tuple(data.get("teams") or ()), data.get("org"),
                                  data["clearance"], None if data.get("projects") is None else tuple(data["projects"]))
            conn.execute(update(api_tokens).where(api_tokens.c.token_id == token_id)
                         .values(**principal_columns(principal)))
        conn.execute(text("DROP INDEX IF EXISTS ix_api_tokens_hash"))  # the unique constraint indexes it
        conn.execute(text("ALTER TABLE api_tokens DROP COLUMN principal"))

    def add_token(self, token_id: str, token_hash: str, principal: Principal, label: str | None,
                  created_at: str) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(insert(api_tokens).values(token_id=token_id, token_hash=token_hash, label=label,
                                                   created_at=created_at, **principal_columns(principal)))

    def principal_for_hash(self, token_hash: str) -> Principal | None:
        found = self.token_for_hash(token_hash)
        return None if found is None else found.principal

    def token_for_hash(self, token_hash: str) -> TokenInfo | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(api_tokens).where(api_tokens.c.token_hash == token_hash,
                                                        api_tokens.c.revoked_at.is_(None))).mappings().first()
        return None if row is None else info_of(row)

    def list_tokens(self) -> list[TokenInfo]:
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.token_id))
            return [info_of(row) for row in rows.mappings()]

    def set_token_projects(self, token_id: str, projects: tuple[str, ...] | None) -> bool:
        stored = None if projects is None else json.dumps(list(projects))
        with self._write() as conn:  # type: ignore[attr-defined]
            done = conn.execute(update(api_tokens).where(api_tokens.c.token_id == token_id,
                                                         api_tokens.c.revoked_at.is_(None))
                                .values(projects=stored, narrowed_at=None)).rowcount
        return bool(done)

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        with self._write() as conn:  # type: ignore[attr-defined]
            done = conn.execute(update(api_tokens).where(api_tokens.c.token_id == token_id,
                                                         api_tokens.c.revoked_at.is_(None))
                                .values(revoked_at=revoked_at)).rowcount
        return bool(done)


def info_of(row: Any) -> TokenInfo:
    return TokenInfo(row["token_id"], principal_of(row), row["label"], row["created_at"], row["revoked_at"],
                     row["narrowed_at"])


def narrow_projectless(conn: Connection) -> None:
    """Once per store: tokens made before least privilege without --project reached every project (a
    NULL ``projects``) only for lack of the flag; they now reach none, marked ``narrowed_at`` so that
    ``memtrove doctor`` names them until projects are granted back. A token made since with
    --project '*' keeps every project: the mark in store_meta says the upgrade ran."""
    if conn.execute(select(store_meta.c.value).where(store_meta.c.key == NARROWED)).scalar() is not None:
        return
    now = utc_now()
    narrowed = conn.execute(update(api_tokens).where(api_tokens.c.projects.is_(None))
                            .values(projects="[]", narrowed_at=now)).rowcount
    put_meta(conn, NARROWED, now)
    if narrowed:
        log.warning("%d token(s) made without --project reached every project; they now reach none (least "
                    "privilege). `memtrove doctor` names them; grant projects back with `memtrove token grant`",
                    narrowed)
