"""Search use cases: hybrid search across collections, artifact search, memory search; snippets; neighbour expansion."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from domain.errors import ValidationError
from domain.search.lexical import analyse
from domain.model import Hit, RequestContext
from domain.ports import ArtifactStore
from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.graph.entities import ENTITIES
from domain.search.filters import parse_filters
from domain.search.second_look import looked
from domain.search.snippets import snippet
from domain.search.retrieve import SHOWN, Retriever
from domain.validation import optional_time, require_int, require_text, require_unit_float

BOUNDARY = "[CHUNK BOUNDARY]"


def check_cap(per_artifact: object) -> int | None:
    """Results one document may take: 1-10, or None for the configured default."""
    return None if per_artifact is None else require_int("per_artifact", per_artifact, 1, 10)


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
    context: RequestContext | None = None  # None: who the Identity port says is calling
    per_artifact: int | None = None  # results one document may take (None: the configured default)
    as_of: str | None = None  # memories valid at this time (default: those valid now)


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    searched: list[str]


@dataclass(frozen=True, slots=True)
class HybridSearch:
    """Artifacts and chunks (memories, with the caller's graph entities, and history on request), each
    collection's signals fused by RRF."""

    retrieve: Retriever
    artifacts: ArtifactStore

    def __call__(self, request: SearchRequest, notes: list[str] | None = None) -> SearchOutcome:
        """``notes`` (when given) gets a line for each thing the caller should know of how the search went."""
        query = require_text("query", request.query, 500, label="Query")
        limit = require_int("limit", request.limit, 1, 50)
        filters = parse_filters(request.filters)
        collections = [WHOLE, CHUNKS]
        if check_flag("include_memory", request.include_memory):
            collections += ["memory", ENTITIES]  # the entities the caller wrote with the graph tools too
        if check_flag("include_history", request.include_history):
            collections.append("history")
        expand = check_flag("expand_neighbors", request.expand_neighbors)
        wheres = {c: where for c in collections if (where := filters.where(c)) is not None}
        context = as_of(request.as_of, request.context or self.retrieve.identity())
        found = self.retrieve(query, wheres, limit, request.mode, request.profile, context,
                              check_cap(request.per_artifact), notes=notes)
        top = focused(looked(self.retrieve, self.artifacts, query, found, list(wheres), request.mode, request.profile),
                      query)
        return SearchOutcome(expanded(self.artifacts, top) if expand else top, [SHOWN[c] for c in wheres])


def focused(hits: list[Hit], query: str) -> list[Hit]:
    """Each hit with its ``snippet``: the part of its text around the query's words (domain/search/snippets.py).

    A chunk is a window cut from a longer text: its first whitespace-separated token may be the
    end of a word cut in two (unless it is the first chunk), and its last one the start of one.
    """
    words = analyse(query).words
    kept: list[Hit] = []
    for hit in hits:
        chunk = hit.type == "chunk"
        later = chunk and int(hit.fields.get("start_char", hit.fields.get("chunk_index", 0))) > 0
        shown = snippet(hit.content, words, open_start=later, open_end=chunk)
        kept.append(Hit(hit.id, hit.type, hit.score, hit.content, {**hit.fields, "snippet": shown}))
    return kept


def expanded(artifacts: ArtifactStore, hits: list[Hit]) -> list[Hit]:
    """Each hit with its neighbours; a chunk next to a better hit of its document is left out, as
    that hit's window already shows it (several passages per document: each text once)."""
    shown: set[tuple[str, int]] = set()
    kept: list[Hit] = []
    for hit in hits:
        if hit.type == "chunk":
            document, (first, last) = str(hit.fields["artifact_id"]), chunk_range(hit)
            if all((document, i) in shown for i in range(first, last + 1)):
                continue
            shown |= {(document, i) for i in range(first - 1, last + 2)}
        kept.append(expand_hit(artifacts, hit))
    return kept


def expand_hit(artifacts: ArtifactStore, hit: Hit) -> Hit:
    """A chunk (or a passage of adjacent chunks: ``chunk_range``) with its neighbours (index ±1) as
    one passage of the artifact's text, nothing repeated.

    Consecutive chunks overlap (token windows) or abut (structure-aware chunkers): each neighbour
    adds only its text outside the hit's, by their offsets in the artifact. The spec's
    ``[CHUNK BOUNDARY]`` markers (000, appendix E) stay, each on a line of its own, where the hit's
    text begins and ends, so the hit's text is exactly the text between them:
    ``before + "\\n[CHUNK BOUNDARY]\\n" + chunk + "\\n[CHUNK BOUNDARY]\\n" + after``, a marker only
    where a neighbour adds text. Without the markers it is the artifact's text over the window.
    """
    if hit.type != "chunk":
        return hit
    first, last = chunk_range(hit)
    window = artifacts.chunk_window(hit.fields["artifact_id"], first - 1, last + 1, bool(hit.fields.get("indexing")))
    inside = [c for c in window if first <= c.index <= last]
    if [c.index for c in inside] != list(range(first, last + 1)):  # replaced or deleted since the search ranked it
        return hit
    start = int(hit.fields.get("start_char", inside[0].start_char))
    end = int(hit.fields.get("end_char", max(c.end_char for c in inside)))
    before = "".join(c.content[: max(0, start - c.start_char)] for c in window if c.index < first)
    after = "".join(c.content[max(0, end - c.start_char):] for c in window if c.index > last)
    parts = [before, BOUNDARY] if before else []
    parts += [hit.content, BOUNDARY, after] if after else [hit.content]
    content = "\n".join(parts)
    return Hit(hit.id, hit.type, hit.score, content,
               {**hit.fields, "expanded": True, "neighbors": [c.id for c in window if c not in inside]})


def chunk_range(hit: Hit) -> tuple[int, int]:
    """The first and last chunk index a chunk hit's text spans (a passage of several: ``chunk_range``)."""
    first, last = hit.fields.get("chunk_range") or (hit.fields["chunk_index"],) * 2
    return int(first), int(last)


@dataclass(frozen=True, slots=True)
class ArtifactSearch:
    """Passage-level search over whole artifacts and chunks, up to ``per_artifact`` results per artifact."""

    retrieve: Retriever
    artifacts: ArtifactStore

    def __call__(self, query: object, limit: object = 5, expand_neighbors: object = False,
                 context: RequestContext | None = None, mode: object = None, profile: object = None,
                 per_artifact: object = None, notes: list[str] | None = None, **filters: object) -> list[Hit]:
        text = require_text("query", query, 500, label="Query")
        count = require_int("limit", limit, 1, 50)
        parsed = parse_filters(None, **filters)
        expand = check_flag("expand_neighbors", expand_neighbors)
        wheres = {c: parsed.where(c) or {} for c in (WHOLE, CHUNKS)}
        found = self.retrieve(text, wheres, count, mode, profile, context, check_cap(per_artifact), notes=notes)
        top = focused(looked(self.retrieve, self.artifacts, text, found, list(wheres), mode, profile), text)
        return expanded(self.artifacts, top) if expand else top


@dataclass(frozen=True, slots=True)
class SearchMemoriesRequest:
    query: str
    limit: int = 5
    min_confidence: float = 0.0
    mode: str | None = None
    profile: str | None = None
    context: RequestContext | None = None  # None: who the Identity port says is calling
    as_of: str | None = None  # memories valid at this time (default: those valid now)


def as_of(value: object, context: RequestContext) -> RequestContext:
    """The caller's context searching as of ``value`` (an ISO-8601 time), or as it is (None)."""
    at = optional_time("as_of", value)
    return context if at is None else replace(context, as_of=at)


@dataclass(frozen=True, slots=True)
class SearchMemories:
    """Memories by meaning and by words, fused; privacy-filtered; one hit per memory."""

    retrieve: Retriever

    def __call__(self, request: SearchMemoriesRequest, notes: list[str] | None = None) -> list[Hit]:
        """``notes`` (when given) gets a line for each thing the caller should know of how the search went
        (a rerank model that failed, so the learned stage ordered the hits)."""
        query = require_text("query", request.query, 500, label="Query")
        limit = require_int("limit", request.limit, 1, 20)
        floor = require_unit_float("min_confidence", request.min_confidence)
        where = {"confidence": {"$gte": floor}} if floor > 0 else {}
        context = as_of(request.as_of, request.context or self.retrieve.identity())
        return whole_within(focused(self.retrieve(query, {"memory": where}, limit, request.mode, request.profile,
                                                  context, notes=notes), query))


# Memories shown whole on one page of memory_search, best first, and the longest one shown whole (longer:
# memory_get). A page of 5 hits of 330-380-token memories measures at most ~1,700 cl100k tokens (its
# metadata alone ~170 a hit): tests/integration/test_result_page_tokens.py.
WHOLE_PAGE_TOKENS = 800
WHOLE_MEMORY_TOKENS = 400


def whole_within(hits: list[Hit], budget: int = WHOLE_PAGE_TOKENS) -> list[Hit]:
    """A found memory reads whole (``whole``) while the page's budget of tokens lasts, best hit first;
    the others keep their snippet, and say they were cut (a 955-character rollback note showed 241)."""
    kept: list[Hit] = []
    for hit in hits:
        size = int(hit.fields.get("token_count") or 0)
        whole = hit.fields.get("snippet") == hit.content or (size <= min(budget, WHOLE_MEMORY_TOKENS) and size > 0)
        if whole and hit.fields.get("snippet") != hit.content:
            budget -= size
        kept.append(Hit(hit.id, hit.type, hit.score, hit.content, {**hit.fields, "whole": whole}))
    return kept
