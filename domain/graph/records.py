"""The records a caller's graph is built from: every memory, turn and artifact it may read (access rules
and privacy policies applied, as on every read), filtered by kind, source and time, each with the
digest of what an extractor would read (so a second build reads only what changed) and its passages."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from domain.access.rules import access_fields, access_filter, access_metadata, visible
from domain.artifacts.usecases import CHUNKS, WHOLE, read_whole
from domain.common import apply_policies
from domain.graph.extraction import KINDS, Passage
from domain.graph.prose import VERSION as PROSE, ProseReader, artifact_passages
from domain.history.usecases import COLLECTION as HISTORY
from domain.memories.usecases import memory_hit
from domain.model import Hit, RequestContext
from domain.ports import ArtifactScopes, ChunkerCatalog, MetadataStore, PrivacyPolicy
from domain.search.retrieve import Retriever
from domain.validation import epoch

PAGE = 200
_SPEAKER = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,3}): ")  # "Caroline: I went..." (a chat export)


@dataclass(frozen=True, slots=True)
class Source:
    kind: str
    record_id: str
    digest: str
    read: Callable[[], list[Passage]]  # its passages (an artifact's chunks are read only when asked)
    ts: float = 0.0  # when it was written: a build reads the oldest first (the first name met is kept)


@dataclass(frozen=True, slots=True)
class Scope:
    kinds: tuple[str, ...] = KINDS
    source: str | None = None  # an artifact's source system, a turn's conversation, or a memory's type
    since: float | None = None
    until: float | None = None

    @property
    def whole(self) -> bool:
        return self.kinds == KINDS and self.source is None and self.since is None and self.until is None

    def takes(self, ts: str, source: str | None) -> bool:
        at = epoch(ts)
        return ((self.source is None or source == self.source) and (self.since is None or at >= self.since)
                and (self.until is None or at <= self.until))


def digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def speaker_of(role: str, content: str) -> tuple[str, str]:
    """Who speaks a turn and what they say: the name before a leading "Name: ", else the role."""
    found = _SPEAKER.match(content)
    return (found.group(1), content[found.end():]) if found else (role, content)


@dataclass(frozen=True, slots=True)
class Readable:
    store: MetadataStore
    scopes: ArtifactScopes
    policies: Sequence[PrivacyPolicy]
    context: RequestContext
    now: float
    version: str  # the extractor's: another extractor reads everything again
    chunkers: ChunkerCatalog | None = None  # the chunker that cut a document tells its prose (domain/graph/prose.py)

    def sources(self, scope: Scope) -> Iterator[Source]:
        if "memory" in scope.kinds:
            yield from self._memories(scope)
        if "turn" in scope.kinds:
            yield from self._turns(scope)
        if "artifact" in scope.kinds:
            yield from self._artifacts(scope)

    def picked(self, kind: str, ids: Sequence[str]) -> list[Source]:
        """The sources of those records (memory, turn or artifact ids) that exist, are the caller's own
        and that it may read; a document by its chunks as a build reads it."""
        own = self.context.actor
        if kind == "memory":
            found = [m for m in self.store.get_memories(list(ids)).values() if m.owner == own]
            return [self._memory(m) for m in self._allowed(found, lambda m: memory_hit(m, None))]
        if kind == "turn":
            found = [t for t in self.store.get_turns(list(ids)).values() if t.owner == own]
            return [self._turn(t) for t in self._allowed(found, lambda t: _hit(t, "history"))]
        found = [a for a in self.store.get_artifacts(list(ids)).values() if a.owner == own]  # type: ignore[attr-defined]
        return [self._artifact(a) for a in self._allowed(found, lambda a: _hit(a, "artifact"))]

    def _memory(self, m: Any) -> Source:
        since = m.valid_from or m.ts  # when what it says holds from
        return Source("memory", m.id, digest(self.version, m.content, since),
                      lambda: [Passage("memory", m.id, m.content, when=since)], epoch(since))

    def _turn(self, t: Any) -> Source:
        speaker, said = speaker_of(t.role, t.content)
        return Source("turn", t.id, digest(self.version, t.content_hash, t.role, t.ts),
                      lambda: [Passage("turn", t.id, said, speaker=speaker, when=t.ts)], epoch(t.ts))

    def _artifact(self, a: Any) -> Source:
        return Source("artifact", a.id, digest(self.version, PROSE, a.version), lambda: self._chunks(a.id), epoch(a.ts))

    def _allowed(self, items: list[Any], hit: Callable[[Any], Hit]) -> list[Any]:
        shown = [i for i in items if visible(access_fields(i), self.context, self.now)]
        kept = {h.id for h in apply_policies(self.policies, [hit(i) for i in shown], self.context)}
        return [i for i in shown if i.id in kept]

    def _memories(self, scope: Scope) -> Iterator[Source]:
        before = None
        while batch := self.store.list_memories(None, PAGE, before):
            for m in self._allowed(batch, lambda m: memory_hit(m, None)):
                if scope.takes(m.ts, m.type):
                    yield self._memory(m)
            if len(batch) < PAGE:
                return
            before = (batch[-1].ts, batch[-1].id)

    def _turns(self, scope: Scope) -> Iterator[Source]:
        after = None
        while batch := self.store.turns_in_order(after, PAGE):
            for t in self._allowed(batch, lambda t: _hit(t, "history")):
                if scope.takes(t.ts, t.conversation_id):
                    yield self._turn(t)
            if len(batch) < PAGE:
                return
            after = (batch[-1].conversation_id, batch[-1].owner, batch[-1].turn_index)

    def _artifacts(self, scope: Scope) -> Iterator[Source]:
        rule, before = access_filter(self.context, self.now), None
        where = {"source_system": scope.source} if scope.source is not None else {}
        while batch := self.scopes.find_artifacts(where, rule, PAGE, before):
            kept = {h.id for h in apply_policies(self.policies, [_hit(a, "artifact") for a in batch], self.context)}
            for a in batch:
                if a.id in kept and scope.takes(a.ts, a.source_system):
                    yield self._artifact(a)
            if len(batch) < PAGE:
                return
            before = (epoch(batch[-1].ts), batch[-1].id)

    def _chunks(self, artifact_id: str) -> list[Passage]:
        """A document's prose, a passage per chunk (domain/graph/prose.py)."""
        artifact, chunks = read_whole(self.store, artifact_id)  # type: ignore[arg-type]
        if artifact is None:
            return []
        chunker = self.chunkers.get(artifact.chunker) if self.chunkers is not None else None
        return artifact_passages(artifact, chunks, chunker if isinstance(chunker, ProseReader) else None)


def _hit(item: Any, kind: str) -> Hit:
    return Hit(id=item.id, type=kind, score=0.0, content="", fields=dict(access_metadata(item)))


def origin_of(hit: Hit) -> tuple[str, str, int] | None:
    """The record a search hit is, as the graph names its origins, with the part read (a chunk's index,
    else -1); None for a hit that is no record a graph is built from (an entity)."""
    if hit.type == "memory":
        return "memory", hit.id, -1
    if hit.type == "history":
        return "turn", hit.id, -1
    if hit.type in ("chunk", "artifact"):
        index = hit.fields.get("chunk_index")
        return "artifact", str(hit.fields.get("artifact_id") or hit.id), int(index) if index is not None else -1
    return None


def found_records(retrieve: Retriever, query: str, limit: int, context: RequestContext) -> list[tuple[str, str]]:
    """The records hybrid retrieval ranks for ``query`` (memories, turns, documents whole or by chunk), best
    first, as the graph names its origins: (memory|turn|artifact, id); a document's chunks count as it."""
    hits = retrieve(query, {"memory": {}, HISTORY: {}, CHUNKS: {}, WHOLE: {}}, limit, context=context)
    kinds = {"memory": "memory", "history": "turn"}
    return list(dict.fromkeys((kinds.get(h.type, "artifact"), str(h.fields.get("artifact_id") or h.id))
                              for h in hits))
