"""The SQL store's artifact and chunk tables, and how their rows map to the domain's records."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Boolean, Column, Float, Index, Integer, String, Table, Text, and_, bindparam, false, or_, text

from adapters.sql.store import _profile, _profile_columns, metadata
from adapters.sql.tables import access_columns, access_of, access_values, json_dict, json_tuple
from domain.model import Artifact, ArtifactChunk
from domain.validation import epoch

PENDING, COMMITTED = "pending", "committed"

artifacts = Table(
    "artifacts", metadata,
    Column("artifact_id", String(40), primary_key=True),
    Column("version", String(12), primary_key=True),
    Column("status", String(10), nullable=False),
    Column("artifact_type", String(16), nullable=False),
    Column("source_system", String(100), nullable=False),
    Column("source_id", String(500)),
    Column("source_url", Text),
    Column("title", Text),
    Column("author", String(200)),
    Column("participants", Text, nullable=False),
    Column("ts", String(40), nullable=False),
    Column("ts_epoch", Float, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("is_chunked", Boolean, nullable=False),
    Column("num_chunks", Integer, nullable=False),
    Column("sensitivity", String(20), nullable=False),
    Column("visibility_scope", String(10), nullable=False),
    Column("retention_policy", String(20), nullable=False),
    Column("ingested_at", String(40), nullable=False),
    Column("chunker", String(64), nullable=False),
    Column("chunker_version", String(32), nullable=False),
    Column("content", Text),
    Column("labels", Text, nullable=False, server_default="{}"),  # JSON: Artifact.labels
    # A pending version written words_first (a new artifact's first): searchable by its words meanwhile.
    Column("indexing", Boolean, nullable=False, server_default=false()),
    *_profile_columns(),
    *access_columns(privacy=False),
    # Lookups name the artifact and the status: an index on the status alone made SQLite walk
    # every committed artifact for a handful of ids.
    Index("ix_artifacts_status_id", "status", "artifact_id"),
    # Scoped lookups (sessions, Zapomni, documents) read one source's: else 85 ms at 44,000 artifacts.
    Index("ix_artifacts_source", "source_system", "status"),
)

chunks = Table(
    "artifact_chunks", metadata,
    Column("artifact_id", String(40), primary_key=True),
    Column("version", String(12), primary_key=True),
    Column("chunk_index", Integer, primary_key=True),
    Column("chunk_id", String(80), nullable=False),
    Column("start_char", Integer, nullable=False),
    Column("end_char", Integer, nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("content", Text, nullable=False),
    Column("meta", Text, nullable=False, server_default="{}"),  # the chunker's JSON metadata
    Index("ix_artifact_chunks_chunk_id", "chunk_id"),
)


def shown_chunks(indexing: bool) -> Any:
    """Chunks joined to their version when a read sees it: committed, or with ``indexing`` also a new
    artifact's version written words_first."""
    committed = artifacts.c.status == COMMITTED
    return chunks.join(artifacts, and_(chunks.c.artifact_id == artifacts.c.artifact_id,
                                       chunks.c.version == artifacts.c.version,
                                       or_(committed, artifacts.c.indexing) if indexing else committed))


def artifact_row(a: Artifact) -> dict[str, Any]:
    return {
        "artifact_id": a.id, "version": a.version, "artifact_type": a.artifact_type,
        "source_system": a.source_system, "source_id": a.source_id, "source_url": a.source_url, "title": a.title,
        "author": a.author, "participants": json.dumps(list(a.participants)), "ts": a.ts, "ts_epoch": epoch(a.ts),
        "content_hash": a.content_hash, "token_count": a.token_count, "is_chunked": a.is_chunked,
        "num_chunks": a.num_chunks, "sensitivity": a.sensitivity, "visibility_scope": a.visibility_scope,
        "retention_policy": a.retention_policy, "ingested_at": a.ingested_at, "chunker": a.chunker,
        "chunker_version": a.chunker_version, "content": a.content,
        "labels": json.dumps(a.labels, sort_keys=True, allow_nan=False),  # valid JSON: the filters parse it
        "embedding_provider": a.profile.provider, "embedding_model": a.profile.model,
        "embedding_dimensions": a.profile.dimensions, "embedding_max_tokens": a.profile.max_tokens,
        **access_values(a, privacy=False),
    }


# By id, each status apart: the (status, artifact_id) index serves both ("status IN" walks it twice).
_BY_IDS = text("SELECT * FROM artifacts WHERE artifact_id IN :ids AND status = :committed").bindparams(
    bindparam("ids", expanding=True))
_INDEXING_BY_IDS = text("SELECT * FROM artifacts WHERE artifact_id IN :ids AND status = :pending AND indexing"
                        ).bindparams(bindparam("ids", expanding=True))


def by_ids(indexing: bool) -> list[Any]:
    return [_BY_IDS, _INDEXING_BY_IDS] if indexing else [_BY_IDS]


def row_artifact(row: Any) -> Artifact:
    return Artifact(
        id=row["artifact_id"], artifact_type=row["artifact_type"], source_system=row["source_system"],
        source_id=row["source_id"], source_url=row["source_url"], title=row["title"], author=row["author"],
        participants=json_tuple(row["participants"]), ts=row["ts"], content_hash=row["content_hash"],
        token_count=row["token_count"], is_chunked=bool(row["is_chunked"]), num_chunks=row["num_chunks"],
        sensitivity=row["sensitivity"], visibility_scope=row["visibility_scope"],
        retention_policy=row["retention_policy"], ingested_at=row["ingested_at"], chunker=row["chunker"],
        chunker_version=row["chunker_version"], profile=_profile(row), content=row["content"],
        labels=json_dict(row["labels"]), **access_of(row, privacy=False),
        indexing=bool(row.get("indexing")) and row["status"] == PENDING)


def row_chunk(row: Any) -> ArtifactChunk:
    return ArtifactChunk(row["chunk_id"], row["artifact_id"], row["chunk_index"], row["start_char"],
                         row["end_char"], row["content"], row["token_count"], row["content_hash"],
                         json_dict(row["meta"]))
