"""Spec 001's searches over session memories: chunks (FINE), sections (MEDIUM), whole memories.

FINE and MEDIUM rank with memtrove's hybrid retrieval (vectors, words and exact tokens fused) inside
the scope's filters; the similarity they report is the cosine of the query and the passage. Scoped
lookups (COARSE, and the searches without a query) read whole memories in iteration order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.artifacts.usecases import reconstruct
from domain.model import Artifact, ArtifactChunk
from domain.ports import ArtifactScopes, ArtifactStore
from domain.search.passages import Passage, PassageSearch
from domain.search.usecases import check_flag
from domain.sessions.scope import SOURCE, SessionMemory, section_key
from domain.validation import require_int, require_text

SCOPED_SIMILARITY = 2.0  # spec 001: a scoped match, not a vector score


def check_query(query: object) -> str:
    return require_text("query", query, 1_000, label="Query")


def check_limit(limit: object) -> int:
    return require_int("limit", limit, 1, 100)


@dataclass(frozen=True, slots=True)
class Section:
    """A MEDIUM result: the whole H1 > H2 section around matching chunks."""

    artifact: Artifact
    key: tuple[str, ...]
    chunks: list[ArtifactChunk]  # every chunk of the section, in order
    content: str
    matched: int
    similarity: float  # the average over the matching chunks

    @property
    def match_ratio(self) -> float:
        return self.matched / max(1, len(self.chunks))


@dataclass(frozen=True, slots=True)
class Memories:
    """Whole memories from their artifacts (chunked ones rebuilt exactly), with their reads."""

    store: ArtifactStore
    scopes: ArtifactScopes

    def __call__(self, artifacts: Sequence[Artifact]) -> list[SessionMemory]:
        reads = self.scopes.accesses([a.id for a in artifacts])
        found = []
        for a in artifacts:
            content = reconstruct(self.store.chunks_of(a.id)) if a.is_chunked else (a.content or "")
            accessed, count = reads.get(a.id, (a.ingested_at, 0))
            found.append(SessionMemory(a, content, accessed, count))
        return found


@dataclass(frozen=True, slots=True)
class ScopedLookup:
    """Whole memories of a scope, newest iteration first (``latest_first=False``: oldest)."""

    scopes: ArtifactScopes
    memories: Memories

    def __call__(self, labels: dict[str, str], limit: object, latest_first: object = True) -> list[SessionMemory]:
        count = check_limit(limit)
        newest = check_flag("latest_first", latest_first)
        return self.memories(self.scopes.list_artifacts(SOURCE, labels, count, newest_first=newest))


@dataclass(frozen=True, slots=True)
class FineSearch:
    """The best chunks (or whole short memories) for the query within the scope."""

    search: PassageSearch

    def __call__(self, query: object, labels: dict[str, str], limit: object) -> list[Passage]:
        return self.passages(check_query(query), labels, check_limit(limit))

    def passages(self, query: str, labels: dict[str, str], limit: int) -> list[Passage]:
        return self.search(query, {"source_system": SOURCE, **labels}, limit, per_artifact=limit)


@dataclass(frozen=True, slots=True)
class SectionSearch:
    """Matching chunks grouped by their H1 > H2 section, each section returned whole."""

    fine: FineSearch
    store: ArtifactStore

    def __call__(self, query: object, labels: dict[str, str], limit: object) -> list[Section]:
        text = check_query(query)
        count = check_limit(limit)
        groups: dict[tuple[str, tuple[str, ...]], list[Passage]] = {}
        for passage in self.fine.passages(text, labels, count * 5):
            key = section_key(passage.chunk) if passage.chunk is not None else ()
            groups.setdefault((passage.artifact.id, key), []).append(passage)
        chunks: dict[str, list[ArtifactChunk]] = {}  # each memory's chunks, read once for all its sections
        sections = [self._section(matched, key, chunks) for (_, key), matched in groups.items()]
        sections.sort(key=lambda s: (-s.similarity, s.artifact.id, s.key))
        return sections[:count]

    def _section(self, matched: list[Passage], key: tuple[str, ...], read: dict[str, list[ArtifactChunk]]) -> Section:
        artifact = matched[0].artifact
        similarity = round(sum(p.similarity for p in matched) / len(matched), 6)
        if matched[0].chunk is None:
            return Section(artifact, key, [], matched[0].text, 1, similarity)
        if artifact.id not in read:
            read[artifact.id] = self.store.chunks_of(artifact.id)
        chunks = [c for c in read[artifact.id] if section_key(c) == key]
        return Section(artifact, key, chunks, joined(chunks), len({p.chunk.id for p in matched if p.chunk}),
                       similarity)


def joined(chunks: list[ArtifactChunk]) -> str:
    """The section's text: each run of consecutive chunks rebuilt exactly, runs apart joined by a blank line."""
    runs: list[list[ArtifactChunk]] = []
    for chunk in chunks:
        if runs and chunk.index == runs[-1][-1].index + 1:
            runs[-1].append(chunk)
        else:
            runs.append([chunk])
    return "\n\n".join(reconstruct(run, from_first=True) for run in runs)


@dataclass(frozen=True, slots=True)
class MemorySearch:
    """Whole memories ranked by their best passage for the query (spec 001's system memory search)."""

    fine: FineSearch
    store: ArtifactStore
    memories: Memories

    def __call__(self, query: object, labels: dict[str, str], limit: object) -> list[tuple[SessionMemory, float]]:
        text = check_query(query)
        count = check_limit(limit)
        best: dict[str, float] = {}
        for passage in self.fine.passages(text, labels, count * 5):
            best.setdefault(passage.artifact.id, passage.similarity)
        ids = list(best)[:count]
        artifacts = self.store.get_artifacts(ids)
        found = self.memories([artifacts[i] for i in ids if i in artifacts])
        return [(m, best[m.artifact.id]) for m in found]
