"""Ingests a crash left behind are finished: by the next start, or by another replica once their lease runs out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from domain.errors import MemtroveError, StorageError
from domain.model import IngestJob
from domain.ports import ArtifactStore
from domain.artifacts.ingest import IngestArtifact, Detached


@dataclass(frozen=True, slots=True)
class ResumeIngests:
    """Take over jobs whose worker is gone (lease run out; at once when this process owns the store)."""

    ingest: IngestArtifact
    store: ArtifactStore
    exclusive: bool = False  # the only process on this store: every open job is an orphan

    def __call__(self, on_error: Callable[[IngestJob, MemtroveError], None] | None = None,
                 jobs: list[IngestJob] | None = None) -> int:
        """``jobs``: those open when this process started (else every open job, by its lease)."""
        resumed = 0
        for job in self.store.open_jobs() if jobs is None else jobs:
            now = float("inf") if self.exclusive else self.ingest.now()
            claimed = self.store.claim_job(job.artifact_id, job.version, self.ingest.worker_id(),
                                           self.ingest.now() + self.ingest.lease_seconds, now)
            if claimed is None:
                continue
            try:
                self.ingest.resume(claimed, Detached())
                resumed += 1
            except MemtroveError as exc:
                if on_error is not None:
                    on_error(claimed, exc)
            except Exception as exc:  # a bug in one job must not strand the others (nor hide it)
                if on_error is not None:
                    on_error(claimed, StorageError(f"{type(exc).__name__}: {exc}"))
        return resumed
