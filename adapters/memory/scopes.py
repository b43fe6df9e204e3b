"""In-memory fake of the ArtifactScopes port, for unit tests (the same contract as the SQL store)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.memory.code import InMemoryCode
from adapters.memory.artifacts import InMemoryLexicalStore
from adapters.vectors.similarity import matches
from domain.access.rules import access_metadata
from adapters.memory.tokens import InMemoryTokens
from adapters.memory.documents import InMemoryDocuments
from adapters.memory.graph import InMemoryGraph
from adapters.memory.changes import InMemoryChangeLog
from adapters.memory.graph_derived import InMemoryDerivedGraph
from adapters.memory.graph_follow import InMemoryGraphFollow
from domain.model import TAG_PREFIX, TAGS, Artifact, AuditEntry, EmbeddingProfile
from domain.ports import ArtifactScopes, Filter, ReembedLedger
from domain.validation import epoch, iso


def holds(artifact: Artifact, name: str, value: str) -> bool:
    if name.startswith(TAG_PREFIX):
        return name.removeprefix(TAG_PREFIX) in artifact.labels.get(TAGS, ())
    return artifact.labels.get(name) == value


class InMemoryScopedArtifacts(InMemoryLexicalStore, ArtifactScopes):
    """Labels read from each artifact; reads counted in a dict."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, tuple[str, int]] = {}

    def list_artifacts(self, source_system: str, labels: Mapping[str, str], limit: int, newest_first: bool = True,
                       before: str | None = None) -> list[Artifact]:
        found = [a for a in self.get_artifacts(list(self.committed_versions())).values()
                 if a.source_system == source_system and all(holds(a, k, v) for k, v in labels.items())
                 and (before is None or epoch(a.ts) < epoch(before))]
        found.sort(key=lambda a: (str(a.labels.get("iter_order") or ""), epoch(a.ts), a.id), reverse=newest_first)
        return found[:limit]

    def record_access(self, artifact_id: str, ts: str) -> tuple[str, int] | None:
        if self.get_artifact(artifact_id) is None:
            return None
        self.reads[artifact_id] = (ts, self.reads.get(artifact_id, ("", 0))[1] + 1)
        return self.reads[artifact_id]

    def accesses(self, ids: Sequence[str]) -> dict[str, tuple[str, int]]:
        return {i: self.reads[i] for i in ids if i in self.reads}

    def artifact_counts(self, source_system: str | None = None, rule: Filter | None = None) -> tuple[int, int]:
        found = [a for a in self.get_artifacts(list(self.committed_versions())).values()
                 if source_system in (None, a.source_system) and matches(access_metadata(a), rule)]
        return len(found), sum(a.num_chunks for a in found)

    def storage_bytes(self) -> int:
        return sum(len(a.content or "") for a in self.get_artifacts(list(self.committed_versions())).values()) + \
            sum(len(c.content) for a in self.committed_versions() for c in self.chunks_of(a))

    def find_artifacts(self, where: Mapping[str, str], rule: Filter | None, limit: int,
                       before: tuple[float, str] | None = None) -> list[Artifact]:
        found = [a for a in self._visible_artifacts(rule)
                 if all(not where.get(k) or getattr(a, k) == where[k] for k in ("source_system", "artifact_type", "owner"))
                 and (a.source_id or "").startswith(where.get("source_id_prefix") or "")
                 and (before is None or (epoch(a.ts), a.id) < before)]
        found.sort(key=lambda a: (epoch(a.ts), a.id), reverse=True)
        return found[:limit]

    def tallies(self, rule: Filter | None) -> dict[str, Any]:
        arts = self._visible_artifacts(rule)
        mems = [m for m in self.memories.values() if matches(access_metadata(m), rule)]
        turns = [t for t in self.turns.values() if matches(access_metadata(t), rule)]
        times = [epoch(i.ts) for i in (*arts, *mems, *turns)]
        return {"memories": dict(sorted(Counter(m.type for m in mems).items())), "turns": len(turns),
                "conversations": len({(t.owner, t.conversation_id) for t in turns}),
                "chunks": sum(a.num_chunks for a in arts),
                "artifacts": {"by_type": dict(sorted(Counter(a.artifact_type for a in arts).items())),
                              "by_source": dict(sorted(Counter(a.source_system for a in arts).items()))},
                "oldest": iso(min(times)) if times else None, "newest": iso(max(times)) if times else None}

    def _visible_artifacts(self, rule: Filter | None) -> list[Artifact]:
        return [a for a in self.get_artifacts(list(self.committed_versions())).values()
                if matches(access_metadata(a), rule)]

    def delete_artifact(self, artifact_id: str, entry: AuditEntry) -> int | None:
        self.reads.pop(artifact_id, None)
        return super().delete_artifact(artifact_id, entry)


class InMemoryStore(InMemoryCode, InMemoryGraphFollow, InMemoryChangeLog, InMemoryTokens, InMemoryDocuments, InMemoryGraph, InMemoryDerivedGraph, InMemoryScopedArtifacts, ReembedLedger):
    """Every store port as dicts, including the re-embedding ledger."""

    def __init__(self) -> None:
        super().__init__()
        self.ledger: dict[str, dict[str, str]] = {}
        self.complete: dict[str, tuple[EmbeddingProfile, int]] = {}

    def reembedded(self, profile_key: str) -> dict[str, str]:
        return dict(self.ledger.get(profile_key, {}))

    def mark_reembedded(self, profile_key: str, entries: Sequence[tuple[str, str]]) -> None:
        self.ledger.setdefault(profile_key, {}).update(entries)

    def mark_complete(self, profile: EmbeddingProfile, audit_seq: int) -> None:
        self.complete[profile.key] = (profile, audit_seq)

    def completed(self, profile_key: str) -> tuple[EmbeddingProfile, int] | None:
        return self.complete.get(profile_key)

    def last_audit_seq(self) -> int:
        return len(self.audit)
