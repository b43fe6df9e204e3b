"""Search use cases: hybrid search across collections, artifact search, memory search; neighbour expansion."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.errors import ValidationError
from domain.model import Hit, RequestContext
from domain.ports import ArtifactStore
from domain.usecases.artifacts import CHUNKS, WHOLE
from domain.usecases.filters import parse_filters
from domain.usecases.retrieve import SHOWN, Retriever
from domain.validation import require_int, require_text, require_unit_float

BOUNDARY = "[CHUNK BOUNDARY]"


def check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(name, f"{name} must be true or false")
    return value


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 5
    filters: dict[str, Any] | None = None
    include_memory: bool = False
    include_history: bool = False
    expand_neighbors: bool = False
    mode: str | None = None
    profile: str | None = None
    context: RequestContext = field(default_factory=RequestContext)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    searched: list[str]


@dataclass(frozen=True, slots=True)
class HybridSearch:
    """Artifacts and chunks (memories and history on request), each collection's signals fused by RRF."""

    retrieve: Retriever
    artifacts: ArtifactStore

    def __call__(self, request: SearchRequest) -> SearchOutcome:
        query = require_text("query", request.query, 500, label="Query")
        limit = require_int("limit", request.limit, 1, 50)
        filters = parse_filters(request.filters)
        collections = [WHOLE, CHUNKS]
        if check_flag("include_memory", request.include_memory):
            collections.append("memory")
        if check_flag("include_history", request.include_history):
            collections.append("history")
        expand = check_flag("expand_neighbors", request.expand_neighbors)
        wheres = {c: where for c in collections if (where := filters.where(c)) is not None}
        top = self.retrieve(query, wheres, limit, request.mode, request.profile, request.context)
        return SearchOutcome([expand_hit(self.artifacts, h) for h in top] if expand else top,
                             [SHOWN[c] for c in wheres])


def expand_hit(artifacts: ArtifactStore, hit: Hit) -> Hit:
    """A chunk with its neighbours (index ±1), joined by [CHUNK BOUNDARY] markers."""
    if hit.type != "chunk":
        return hit
    index = int(hit.fields["chunk_index"])
    window = artifacts.chunk_window(hit.fields["artifact_id"], index - 1, index + 1)
    parts: list[str] = []
    for chunk in window:
        if parts:
            parts.append(BOUNDARY)
        parts.append(hit.content if chunk.index == index else chunk.content)
    return Hit(hit.id, hit.type, hit.score, "\n".join(parts) if parts else hit.content,
               {**hit.fields, "expanded": True, "neighbors": [c.id for c in window if c.index != index]})


@dataclass(frozen=True, slots=True)
class ArtifactSearch:
    """Passage-level search over whole artifacts and chunks, one result per artifact (best chunk wins)."""

    retrieve: Retriever
    artifacts: ArtifactStore

    def __call__(self, query: object, limit: object = 5, expand_neighbors: object = False,
                 context: RequestContext | None = None, mode: object = None, profile: object = None,
                 **filters: object) -> list[Hit]:
        text = require_text("query", query, 500, label="Query")
        count = require_int("limit", limit, 1, 50)
        parsed = parse_filters(None, **filters)
        expand = check_flag("expand_neighbors", expand_neighbors)
        wheres = {c: parsed.where(c) or {} for c in (WHOLE, CHUNKS)}
        top = self.retrieve(text, wheres, count, mode, profile, context)
        return [expand_hit(self.artifacts, h) for h in top] if expand else top


@dataclass(frozen=True, slots=True)
class SearchMemoriesRequest:
    query: str
    limit: int = 5
    min_confidence: float = 0.0
    mode: str | None = None
    profile: str | None = None
    context: RequestContext = field(default_factory=RequestContext)


@dataclass(frozen=True, slots=True)
class SearchMemories:
    """Memories by meaning and by words, fused; privacy-filtered; one hit per memory."""

    retrieve: Retriever

    def __call__(self, request: SearchMemoriesRequest) -> list[Hit]:
        query = require_text("query", request.query, 500, label="Query")
        limit = require_int("limit", request.limit, 1, 20)
        floor = require_unit_float("min_confidence", request.min_confidence)
        where = {"confidence": {"$gte": floor}} if floor > 0 else {}
        return self.retrieve(query, {"memory": where}, limit, request.mode, request.profile, request.context)
