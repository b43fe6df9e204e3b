"""Spec 001's utility tools that read: chunk context, reconstruction, one memory, stats, sessions."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from domain.access.principal import Identity
from domain.artifacts.usecases import GetArtifact, check_artifact_id
from domain.common import Clock, utc_now
from domain.errors import NotFoundError, ValidationError
from domain.ids import artifact_of
from domain.model import Artifact, ArtifactChunk, RequestContext
from domain.ports import ArtifactScopes, ArtifactStore
from domain.sessions.scope import KINDS, SOURCE, SessionMemory, session_label
from domain.sessions.search import Memories
from domain.validation import optional_text, require_int, require_text

EVERY = 1_000_000  # the most memories a session summary reads


def session_artifact(store: ArtifactStore, memory_id: object, field_name: str = "memory_id") -> Artifact:
    """The session memory of that id (another artifact, or none, is not found)."""
    art_id = check_artifact_id(memory_id) if field_name == "artifact_id" else _memory_id(memory_id, field_name)
    artifact = store.get_artifact(art_id)
    if artifact is None or artifact.source_system != SOURCE or artifact.labels.get("memory_type") not in KINDS:
        raise NotFoundError(f"Memory {art_id} not found")
    return artifact


def _memory_id(value: object, field_name: str) -> str:
    try:
        return check_artifact_id(value)
    except ValidationError as exc:
        raise ValidationError(field_name, exc.message.replace("artifact_id", field_name)) from None


@dataclass(frozen=True, slots=True)
class ChunkContext:
    artifact: Artifact
    target: ArtifactChunk
    chunks: list[ArtifactChunk]
    window: int


@dataclass(frozen=True, slots=True)
class ExpandChunk:
    """A chunk with up to ``surrounding_chunks`` chunks before and after it."""

    store: ArtifactStore

    def __call__(self, chunk_id: object, surrounding_chunks: object = 2) -> ChunkContext:
        wanted = require_text("chunk_id", chunk_id, 200, label="chunk_id")
        window = require_int("surrounding_chunks", surrounding_chunks, 0, 20)
        artifact = session_artifact(self.store, artifact_of(wanted), "chunk_id")
        if wanted == artifact.id and not artifact.is_chunked:  # a memory kept whole is its own one chunk
            whole = ArtifactChunk(artifact.id, artifact.id, 0, 0, len(artifact.content or ""), artifact.content or "",
                                  artifact.token_count, artifact.content_hash)
            return ChunkContext(artifact, whole, [whole], window)
        target = self.store.get_chunks([wanted]).get(wanted)
        if target is None:
            raise NotFoundError(f"Chunk {wanted} not found")
        chunks = self.store.chunk_window(artifact.id, target.index - window, target.index + window)
        return ChunkContext(artifact, target, chunks, window)


@dataclass(frozen=True, slots=True)
class Reconstruct:
    """A memory's full text from its chunks' offsets, byte for byte as stored."""

    store: ArtifactStore
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)

    def __call__(self, memory_id: object) -> tuple[Artifact, str]:
        read = GetArtifact(self.store, identity=self.identity)
        view = read(session_artifact(self.store, memory_id).id, include_content=True)
        if view.artifact is None or view.content is None:  # deleted meanwhile
            raise NotFoundError(f"Memory {memory_id} not found")
        return view.artifact, view.content


@dataclass(frozen=True, slots=True)
class GetSessionMemory:
    """One memory, whole; the read is counted (accessed_at, access_count)."""

    store: ArtifactStore
    scopes: ArtifactScopes
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)

    def __call__(self, memory_id: object) -> SessionMemory:
        artifact, content = Reconstruct(self.store, self.identity)(memory_id)
        read = self.scopes.record_access(artifact.id, self.clock())
        if read is None:
            raise NotFoundError(f"Memory {artifact.id} not found")
        return SessionMemory(artifact, content, read[0], read[1])


@dataclass(frozen=True, slots=True)
class SessionStats:
    session_id: str
    memory_counts: dict[str, int]
    agent_counts: dict[str, int]
    total_memories: int
    total_chunks: int
    earliest_created: str | None
    latest_created: str | None


@dataclass(frozen=True, slots=True)
class GetSessionStats:
    scopes: ArtifactScopes

    def __call__(self, session_id: object) -> SessionStats:
        session = require_text("session_id", session_id, 200, label="session_id")
        found = self.scopes.list_artifacts(SOURCE, {"session_id": session}, EVERY, newest_first=False)
        times = sorted(a.ts for a in found)
        return SessionStats(session, dict(Counter(session_label(a, "memory_type") or "" for a in found)),
                            dict(Counter(session_label(a, "agent_id") or "" for a in found)), len(found),
                            sum(a.num_chunks for a in found), times[0] if times else None,
                            times[-1] if times else None)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: str
    agent_id: str  # the agent asked for, else the agent most recently active in it
    memory_count: int
    latest_activity: str
    memory_types: dict[str, int] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ListSessions:
    """Sessions with their activity, most recently active first (optionally those of one agent)."""

    scopes: ArtifactScopes

    def __call__(self, limit: object = 20, agent_id: object = None) -> tuple[list[SessionSummary], int]:
        count = require_int("limit", limit, 1, 100)
        agent = optional_text("agent_id", agent_id, 200, label="agent_id")
        found = self.scopes.list_artifacts(SOURCE, {"agent_id": agent} if agent else {}, EVERY)
        sessions: dict[str, list[Artifact]] = {}
        for a in found:  # newest first
            if (session := session_label(a, "session_id")) is not None:
                sessions.setdefault(session, []).append(a)
        summaries = [SessionSummary(
            session, agent or session_label(max(items, key=lambda a: a.ts), "agent_id") or "", len(items),
            max(a.ts for a in items), dict(Counter(session_label(a, "memory_type") or "" for a in items)),
            sorted({session_label(a, "agent_id") or "" for a in items}))
            for session, items in sessions.items()]
        summaries.sort(key=lambda s: (s.latest_activity, s.session_id), reverse=True)
        return summaries[:count], len(summaries)


@dataclass(frozen=True, slots=True)
class TaskContext:
    session_context: SessionMemory | None
    input_prompts: list[SessionMemory]
    recent_reports: list[SessionMemory]
    recent_working_memory: list[SessionMemory]


@dataclass(frozen=True, slots=True)
class LoadTaskContext:
    """What a sub-agent needs to carry on: the latest context, the prompts, recent reports and work."""

    scopes: ArtifactScopes
    memories: Memories

    def __call__(self, session_id: object, session_iter: object) -> TaskContext:
        session = require_text("session_id", session_id, 200, label="session_id")
        iteration = require_text("session_iter", session_iter, 100, label="session_iter")
        scope = {"session_id": session}

        def latest(memory_type: str, limit: int, **more: str) -> list[SessionMemory]:
            return self.memories(self.scopes.list_artifacts(SOURCE, {**scope, "memory_type": memory_type, **more},
                                                            limit))
        context = latest("session_context", 1, session_iter=iteration)
        return TaskContext(context[0] if context else None, latest("input_prompt", EVERY),
                           latest("report", 5), latest("working_memory", 5))
