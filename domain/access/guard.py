"""The store as one caller may see it: the view the toolsets read through (sessions, Zapomni,
project documents), so that every artifact they return, list, expand, reconstruct or export passes
the access rule. Everything else is the store's own (writes are checked by their use cases)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from domain.access.principal import Identity
from domain.access.rules import NOT_VISIBLE, access_fields, access_filter, visible
from domain.common import denied, utc_now
from domain.ids import artifact_of
from domain.model import Artifact, ArtifactChunk


class GuardedStore:
    """Reads of artifacts, their chunks and their scopes, limited to what the caller may see."""

    def __init__(self, store: Any, identity: Identity, now: Callable[[], float] = time.time) -> None:
        self._store = store
        self._identity = identity
        self._now = now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _seen(self, artifact: Artifact | None) -> bool:
        return artifact is not None and visible(access_fields(artifact), self._identity(), self._now())

    def get_artifact(self, artifact_id: str) -> Artifact | None:
        """One artifact by id, if the caller may see it; one it may not see is a refusal it could notice
        (a read by id), audited as the direct reads are."""
        found = self._store.get_artifact(artifact_id)
        if found is None or self._seen(found):
            return found
        denied(self._store, self._identity(), "get", "artifact", artifact_id, NOT_VISIBLE, utc_now())
        return None

    def get_artifacts(self, ids: Sequence[str], indexing: bool = False) -> dict[str, Artifact]:
        return {k: a for k, a in self._store.get_artifacts(ids, indexing).items() if self._seen(a)}

    def chunks_of(self, artifact_id: str) -> list[ArtifactChunk]:
        return self._store.chunks_of(artifact_id) if self.get_artifact(artifact_id) else []

    def get_chunks(self, chunk_ids: Sequence[str], indexing: bool = False) -> dict[str, ArtifactChunk]:
        found = self._store.get_chunks(chunk_ids, indexing)
        owners = self.get_artifacts(sorted({artifact_of(i) for i in found}), indexing)
        return {i: c for i, c in found.items() if artifact_of(i) in owners}

    def chunk_window(self, artifact_id: str, first: int, last: int, indexing: bool = False) -> list[ArtifactChunk]:
        seen = self.get_artifacts([artifact_id], indexing) if indexing else self.get_artifact(artifact_id)
        return self._store.chunk_window(artifact_id, first, last, indexing) if seen else []

    def artifact_counts(self, source_system: str | None = None) -> tuple[int, int]:
        """Counts of what the caller may see only."""
        return self._store.artifact_counts(source_system, access_filter(self._identity(), self._now()))

    def record_access(self, artifact_id: str, ts: str) -> tuple[str, int] | None:
        return self._store.record_access(artifact_id, ts) if self.get_artifact(artifact_id) else None

    def list_artifacts(self, source_system: str, labels: Mapping[str, str], limit: int, newest_first: bool = True,
                       before: str | None = None) -> list[Artifact]:
        """Up to ``limit`` the caller may see, in the store's order, however many others come first."""
        asked = limit
        while True:
            found = self._store.list_artifacts(source_system, labels, asked, newest_first, before)
            seen = [a for a in found if self._seen(a)]
            if len(seen) >= limit or len(found) < asked:
                return seen[:limit]
            asked *= 4
