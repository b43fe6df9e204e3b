"""Spec 002's Zapomni tools as a view over the artifacts: add a memory, search memories, statistics.

A Zapomni memory is an artifact of source system ``zapomni`` (chunked like any artifact when large)
whose labels hold its tags and source; its id is derived from its text and metadata, so adding the
same memory twice returns the first: the deduplication that spec 002 leaves for later (its known
limitation "No idempotency", mitigation "Consider deduplication in core layer (future)").
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest, utf8_size
from domain.chunking import content_hash
from domain.errors import ValidationError
from domain.model import TAG_PREFIX
from domain.ports import ArtifactScopes, VectorIndex
from domain.search.filters import check_tags
from domain.search.passages import Passage, PassageSearch
from domain.validation import epoch, optional_text, parse_timestamp, require_int

SOURCE = "zapomni"
MAX_TEXT = 10_000_000  # bytes of UTF-8 ("10 MB")
MAX_QUERY = 1_000
FILTERS = ("date_from", "date_to", "tags", "source")


class LatencyMeter:
    """Average search latency over the life of the process (get_stats reports it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._total_ms = 0.0

    def record(self, ms: float) -> None:
        with self._lock:
            self._count += 1
            self._total_ms += ms

    def average(self) -> float | None:
        with self._lock:
            return round(self._total_ms / self._count, 3) if self._count else None


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ValidationError("text", "text must be a string")
    if not text.strip():
        raise ValidationError("text", "text cannot be empty or whitespace-only")
    size = utf8_size(text)
    if size > MAX_TEXT:
        raise ValidationError("text", f"text exceeds the maximum of 10 MB ({MAX_TEXT} bytes of UTF-8, got {size})")
    return text.strip()


def check_metadata(metadata: object) -> tuple[dict[str, Any], str | None]:
    """Labels (tags, source and the rest of the metadata kept as given) and the memory's date, if any."""
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata", "metadata must be an object")
    rest = {k: v for k, v in metadata.items() if k not in ("tags", "source", "date")}
    try:
        kept = json.dumps(rest, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        raise ValidationError("metadata", "metadata must hold JSON values (no NaN or Infinity)") from None
    if len(kept) > 10_000:
        raise ValidationError("metadata", f"metadata exceeds 10,000 characters as JSON (got {len(kept)})")
    labels: dict[str, Any] = {"tags": check_tags(metadata.get("tags"), "tags")}
    source = optional_text("source", metadata.get("source"), 200, label="source")
    if source is not None:
        labels["source"] = source
    if rest:
        labels["metadata"] = rest
    date = parse_timestamp("date", metadata["date"]) if metadata.get("date") is not None else None
    return labels, date


@dataclass(frozen=True, slots=True)
class AddedMemory:
    memory_id: str
    chunks_created: int  # 0 while a memory being stored elsewhere is still cut into chunks
    duplicate: bool  # this memory was already stored, or already being stored by another call
    pending: bool = False  # being stored in the background (by another call, or one that took this one's over)


@dataclass(frozen=True, slots=True)
class AddMemory:
    ingest: IngestArtifact

    def __call__(self, text: object, metadata: object = None) -> AddedMemory:
        content = check_text(text)
        labels, date = check_metadata(metadata)
        identity = json.dumps([labels, date, content_hash(content)], sort_keys=True)
        source_id = hashlib.sha256(identity.encode()).hexdigest()
        try:
            result = self.ingest(IngestRequest("note", SOURCE, content, source_id=source_id, ts=date, labels=labels))
        except ValidationError as exc:  # the ingest's own checks name its fields; this tool's are text and metadata
            if exc.field == "content":
                raise ValidationError("text", exc.message.replace("Content", "Text").replace("content", "text")) \
                    from None
            raise ValidationError("date" if exc.field == "ts" else exc.field, exc.message) from None
        job = result.job
        if job is not None:
            chunks = result.artifact.num_chunks if result.artifact is not None else 0
            return AddedMemory(job.artifact_id, chunks, result.joined, pending=True)
        artifact = result.settled()
        return AddedMemory(artifact.id, artifact.num_chunks, result.status == "unchanged")


def check_filters(filters: object) -> dict[str, Any]:
    """Spec 002's filters as an index filter: date range (on the memory's date), tags (all), source."""
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise ValidationError("filters", "filters must be an object")
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ValidationError("filters", f"Unknown key {unknown[0]!r} in filters; allowed: {', '.join(FILTERS)}")
    where: dict[str, Any] = {f"{TAG_PREFIX}{tag}": True for tag in check_tags(filters.get("tags"), "tags")}
    source = optional_text("source", filters.get("source"), 200, label="source")
    if source is not None:
        where["source"] = source
    bounds = {op: epoch(parse_timestamp(name, filters[name]))
              for name, op in (("date_from", "$gte"), ("date_to", "$lte")) if filters.get(name) is not None}
    if len(bounds) == 2 and bounds["$gte"] > bounds["$lte"]:
        raise ValidationError("date_from", "date_from is after date_to")
    if bounds:
        where["ts_epoch"] = bounds
    return where


@dataclass(frozen=True, slots=True)
class SearchMemory:
    search: PassageSearch
    meter: LatencyMeter

    def __call__(self, query: object, limit: object = 10, filters: object = None) -> list[Passage]:
        if not isinstance(query, str):
            raise ValidationError("query", "query must be a string")
        if not query.strip():
            raise ValidationError("query", "query cannot be empty or whitespace-only")
        if len(query) > MAX_QUERY:
            raise ValidationError("query", f"query exceeds {MAX_QUERY} characters (got {len(query)})")
        count = require_int("limit", limit, 1, 100)
        where = {"source_system": SOURCE, **check_filters(filters)}
        started = time.perf_counter()
        found = self.search(query.strip(), where, count)
        self.meter.record((time.perf_counter() - started) * 1000)
        return found


@dataclass(frozen=True, slots=True)
class Statistics:
    total_memories: int
    total_chunks: int
    database_size_mb: float
    avg_query_latency_ms: float | None


@dataclass(frozen=True, slots=True)
class GetStats:
    """The figures of the whole store: its database and the vector index's own files (an embedded Chroma's)."""

    scopes: ArtifactScopes
    meter: LatencyMeter
    vectors: VectorIndex

    def __call__(self) -> Statistics:
        memories, chunks = self.scopes.artifact_counts(SOURCE)
        size = self.scopes.storage_bytes() + self.vectors.storage_bytes()
        return Statistics(memories, chunks, round(size / 1_048_576, 3), self.meter.average())
