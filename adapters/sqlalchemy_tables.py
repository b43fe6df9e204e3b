"""The SQL store's own tables (settings, memories, turns, audit log) and the rows they map to."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Connection, Float, Integer, String, Table, Text, UniqueConstraint
from sqlalchemy.dialects import postgresql, sqlite

from adapters.sqlalchemy_base import metadata
from domain.model import EmbeddingProfile, Memory, Turn

store_meta = Table("store_meta", metadata, Column("key", String(64), primary_key=True), Column("value", Text))


def put_meta(conn: Connection, key: str, value: str, replace: bool = True) -> None:
    """Set a store_meta value in one statement (replicas starting at once may both write it); with
    ``replace=False`` a value already there is kept."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(store_meta).values(key=key, value=value)
    conn.execute(statement.on_conflict_do_update(index_elements=[store_meta.c.key], set_={"value": value})
                 if replace else statement.on_conflict_do_nothing(index_elements=[store_meta.c.key]))


def _profile_columns() -> list[Column]:
    return [Column("embedding_provider", String(64), nullable=False),
            Column("embedding_model", String(200), nullable=False),
            Column("embedding_dimensions", Integer, nullable=False),
            Column("embedding_max_tokens", Integer, nullable=False)]


memories = Table(
    "memories", metadata,
    Column("id", String(64), primary_key=True),
    Column("content", Text, nullable=False),
    Column("type", String(16), nullable=False, index=True),
    Column("confidence", Float, nullable=False),
    Column("ts", String(40), nullable=False),
    Column("ts_epoch", Float, nullable=False, index=True),
    Column("conversation_id", String(100), index=True),
    Column("token_count", Integer, nullable=False),
    *_profile_columns(),
)

turns = Table(
    "turns", metadata,
    Column("id", String(160), primary_key=True),
    Column("conversation_id", String(100), nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("ts", String(40), nullable=False),
    Column("ts_epoch", Float, nullable=False, index=True),
    Column("token_count", Integer, nullable=False),
    Column("content_hash", String(64), nullable=False),
    *_profile_columns(),
    UniqueConstraint("conversation_id", "turn_index", name="uq_turn_position"),
)

audit = Table(
    "audit_log", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("ts", String(40), nullable=False),
    Column("actor", String(100), nullable=False),
    Column("action", String(32), nullable=False),
    Column("collection", String(32), nullable=False),
    Column("item_ids", Text, nullable=False),
    Column("detail", Text, nullable=False),
)


def _profile_values(profile: EmbeddingProfile) -> dict[str, Any]:
    return {"embedding_provider": profile.provider, "embedding_model": profile.model,
            "embedding_dimensions": profile.dimensions, "embedding_max_tokens": profile.max_tokens}


def _profile(row: Any) -> EmbeddingProfile:
    return EmbeddingProfile(row["embedding_provider"], row["embedding_model"],
                            row["embedding_dimensions"], row["embedding_max_tokens"])


def _memory(row: Any) -> Memory:
    return Memory(id=row["id"], content=row["content"], type=row["type"], confidence=row["confidence"],
                  ts=row["ts"], conversation_id=row["conversation_id"], token_count=row["token_count"],
                  profile=_profile(row))


def _turn(row: Any) -> Turn:
    return Turn(id=row["id"], conversation_id=row["conversation_id"], role=row["role"], content=row["content"],
                turn_index=row["turn_index"], ts=row["ts"], token_count=row["token_count"],
                content_hash=row["content_hash"], profile=_profile(row))
