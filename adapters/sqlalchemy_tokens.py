"""Bearer tokens in the SQL store: the hash of each secret and the principal it names (TokenStore)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Column, Index, String, Table, Text, insert, select, update

from adapters.sqlalchemy_base import metadata
from domain.access.principal import Principal
from domain.ports.identity import TokenInfo, TokenStore

api_tokens = Table(
    "api_tokens", metadata,
    Column("token_id", String(40), primary_key=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("principal", Text, nullable=False),  # JSON: user_id, teams, org, clearance, projects
    Column("label", String(200)),
    Column("created_at", String(40), nullable=False),
    Column("revoked_at", String(40)),
    Index("ix_api_tokens_hash", "token_hash"),
)


def principal_json(principal: Principal) -> str:
    return json.dumps({"user_id": principal.user_id, "teams": list(principal.teams), "org": principal.org,
                       "clearance": principal.clearance,
                       "projects": None if principal.projects is None else list(principal.projects)}, sort_keys=True)


def principal_of(raw: str) -> Principal:
    data = json.loads(raw)
    projects = data.get("projects")
    return Principal(data["user_id"], tuple(data.get("teams") or ()), data.get("org"), data["clearance"],
                     None if projects is None else tuple(projects))


def _info(row: Any) -> TokenInfo:
    return TokenInfo(row["token_id"], principal_of(row["principal"]), row["label"], row["created_at"],
                     row["revoked_at"])


class SqlTokens(TokenStore):
    """A mixin of the SQL store (its engine, ``_read`` and ``_write``)."""

    def add_token(self, info: TokenInfo, token_hash: str) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(insert(api_tokens).values(token_id=info.token_id, token_hash=token_hash,
                                                   principal=principal_json(info.principal), label=info.label,
                                                   created_at=info.created_at))

    def principal_for(self, token_hash: str) -> Principal | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            raw = conn.execute(select(api_tokens.c.principal).where(
                api_tokens.c.token_hash == token_hash, api_tokens.c.revoked_at.is_(None))).scalar()
        return None if raw is None else principal_of(raw)

    def list_tokens(self) -> list[TokenInfo]:
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(api_tokens).order_by(api_tokens.c.created_at, api_tokens.c.token_id))
            return [_info(row) for row in rows.mappings()]

    def revoke_token(self, token_id: str, revoked_at: str) -> bool:
        with self._write() as conn:  # type: ignore[attr-defined]
            done = conn.execute(update(api_tokens).where(api_tokens.c.token_id == token_id,
                                                         api_tokens.c.revoked_at.is_(None))
                                .values(revoked_at=revoked_at)).rowcount
        return bool(done)
