"""The SQL store's own tables (settings, memories, turns, audit log) and the rows they map to."""

from __future__ import annotations

import functools
import json
from typing import Any

from sqlalchemy import Column, Connection, Float, Integer, String, Table, Text, UniqueConstraint, inspect, text
from sqlalchemy.dialects import postgresql, sqlite

from adapters.sql.base import metadata
from domain.access.principal import LOCAL_USER
from domain.access.rules import NEVER
from domain.memories.validity import END, FIELDS, START
from domain.model import ArtifactChunk, EmbeddingProfile, Memory, Turn

LOCAL_ACL = json.dumps([f"u:{LOCAL_USER}"])

store_meta = Table("store_meta", metadata, Column("key", String(64), primary_key=True), Column("value", Text))


def put_meta(conn: Connection, key: str, value: str, replace: bool = True) -> None:
    """Set a store_meta value in one statement (replicas starting at once may both write it); with
    ``replace=False`` a value already there is kept."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(store_meta).values(key=key, value=value)
    conn.execute(statement.on_conflict_do_update(index_elements=[store_meta.c.key], set_={"value": value})
                 if replace else statement.on_conflict_do_nothing(index_elements=[store_meta.c.key]))


def access_columns(privacy: bool) -> list[Column]:
    """Who may see a row (domain.access.rules): its owner, its audience's access keys (a JSON list), its
    expiry; with ``privacy`` also the spec's privacy fields (artifacts have their own)."""
    columns = [Column("owner", String(100), nullable=False, server_default=LOCAL_USER),
               Column("acl", Text, nullable=False, server_default=LOCAL_ACL),
               Column("expires_epoch", Float, nullable=False, server_default=str(NEVER))]
    if privacy:
        columns += [Column("sensitivity", String(20), nullable=False, server_default="normal"),
                    Column("visibility_scope", String(10), nullable=False, server_default="me"),
                    Column("retention_policy", String(20), nullable=False, server_default="forever")]
    return columns


def access_values(item: Any, privacy: bool = True) -> dict[str, Any]:
    values = {"owner": item.owner, "acl": json.dumps(sorted(item.acl)), "expires_epoch": item.expires_epoch}
    if privacy:
        values |= {"sensitivity": item.sensitivity, "visibility_scope": item.visibility_scope,
                   "retention_policy": item.retention_policy}
    return values


@functools.lru_cache(maxsize=4096)
def json_tuple(value: str | None) -> tuple[Any, ...]:
    """A JSON list column as a tuple. The same few lists (access keys, participants) come back on
    most rows a search reads: each is parsed once."""
    return tuple(json.loads(value)) if value and value != "[]" else ()


def json_dict(value: str | None) -> dict[str, Any]:
    """A JSON object column as a new dict (most are empty: no parsing then)."""
    return json.loads(value) if value and value != "{}" else {}


def access_of(row: Any, privacy: bool = True) -> dict[str, Any]:
    values = {"owner": row["owner"], "acl": json_tuple(row["acl"]), "expires_epoch": float(row["expires_epoch"])}
    if privacy:
        values |= {"sensitivity": row["sensitivity"], "visibility_scope": row["visibility_scope"],
                   "retention_policy": row["retention_policy"]}
    return values


def add_access_columns(conn: Connection, table: str, privacy: bool) -> bool:
    """Columns of access_columns a table made before them lacks, added (True when any was), and the
    index the retention sweep finds expired rows by."""
    have = {c["name"] for c in inspect(conn).get_columns(table)}
    added = False
    for column in access_columns(privacy):
        if column.name not in have:
            kind = column.type.compile(dialect=conn.dialect)
            default = str(column.server_default.arg).replace("'", "''")  # type: ignore[union-attr]
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column.name} {kind} NOT NULL DEFAULT '{default}'"))
            added = True
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_expires ON {table} (expires_epoch)"))
    return added


def _profile_columns() -> list[Column]:
    return [Column("embedding_provider", String(64), nullable=False),
            Column("embedding_model", String(200), nullable=False),
            Column("embedding_dimensions", Integer, nullable=False),
            Column("embedding_max_tokens", Integer, nullable=False)]


VALIDITY = FIELDS  # a memory's valid time (domain/memories/validity.py)

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
    *access_columns(privacy=True),
    *(Column(name, String(160), nullable=True) for name in VALIDITY),
    # Its interval in epoch seconds (the end 9e15 while it holds still), for the lexical index's filter.
    Column(START, Float), Column(END, Float),
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
    *access_columns(privacy=True),
    # A conversation id is each owner's own (adapters/sql/turn_keys.py upgrades older stores).
    UniqueConstraint("conversation_id", "owner", "turn_index", name="uq_turn_owner_position"),
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
                  profile=_profile(row), **{name: row.get(name) for name in VALIDITY}, **access_of(row))


def add_validity_columns(conn: Connection) -> None:
    """Memories of a store made before valid time get its columns (empty: valid from when stored, still)."""
    have = {c["name"] for c in inspect(conn).get_columns("memories")}
    for name in VALIDITY:
        if name not in have:
            conn.execute(text(f"ALTER TABLE memories ADD COLUMN {name} VARCHAR(160)"))


def _turn(row: Any) -> Turn:
    return Turn(id=row["id"], conversation_id=row["conversation_id"], role=row["role"], content=row["content"],
                turn_index=row["turn_index"], ts=row["ts"], token_count=row["token_count"],
                content_hash=row["content_hash"], profile=_profile(row), **access_of(row))


def row_dicts(result: Any) -> list[dict[str, Any]]:
    """A result's rows as plain dicts: searches read rows by the hundred, and a dict of the driver's
    tuple costs less than a mapping row."""
    keys = list(result.keys())
    return [dict(zip(keys, row)) for row in result.all()]


def chunk_values(c: ArtifactChunk, version: str) -> dict[str, Any]:
    return {"artifact_id": c.artifact_id, "version": version, "chunk_index": c.index, "chunk_id": c.id,
            "start_char": c.start_char, "end_char": c.end_char, "token_count": c.token_count,
            "content_hash": c.content_hash, "content": c.content, "meta": json.dumps(c.metadata, sort_keys=True)}
