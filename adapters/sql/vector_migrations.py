"""Upgrades of the vectors table and its outbox in stores written by earlier releases."""

from __future__ import annotations

import json

from sqlalchemy import inspect, insert, select, text
from sqlalchemy.engine import Connection

from adapters.sql.vectors import outbox, vectors
from domain.access.principal import LOCAL_USER
from domain.access.rules import NEVER, acl_fields


def migrate_vector_tables(conn: Connection) -> None:
    """The outbox of a store made before items said whether their owner is new, and vectors before
    they said which text they were embedded from."""
    if "fresh" not in {c["name"] for c in inspect(conn).get_columns("vector_outbox")}:
        conn.execute(text("ALTER TABLE vector_outbox ADD COLUMN fresh BOOLEAN NOT NULL DEFAULT false"))
    if "text_key" not in {c["name"] for c in inspect(conn).get_columns("vectors")}:
        blob = "BYTEA" if conn.dialect.name == "postgresql" else "BLOB"
        conn.execute(text(f"ALTER TABLE vectors ADD COLUMN text_key {blob}"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_vectors_text_key ON vectors (text_key) WHERE text_key IS NOT NULL"))


def backfill_access(conn: Connection) -> None:
    """Vectors written before items carried access fields get the local owner's (private, never
    expiring; artifacts keep their sensitivity) and are queued, so the vector index gets them too.
    Runs once per store, at the upgrade that adds the access columns."""
    local = {**acl_fields([f"u:{LOCAL_USER}"]), "expires_epoch": NEVER}
    if conn.dialect.name == "postgresql":
        conn.execute(text("UPDATE vectors SET meta = CAST(CAST(meta AS jsonb) || CAST(:local AS jsonb) || "
                          "jsonb_build_object('sensitivity', COALESCE(CAST(meta AS jsonb) ->> 'sensitivity', "
                          "'normal')) AS text)"), {"local": json.dumps(local)})
    else:
        conn.execute(text("UPDATE vectors SET meta = json_patch(json_patch(meta, :local), json_object('sensitivity', "
                          "COALESCE(json_extract(meta, '$.sensitivity'), 'normal')))"), {"local": json.dumps(local)})
    conn.execute(insert(outbox).from_select(["collection", "owner"],
                                            select(vectors.c.collection, vectors.c.owner).distinct()))
