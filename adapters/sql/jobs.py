"""Ingest jobs in the SQL store: progress and vectors of a pending version, held under a lease."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update

from adapters.sql.vectors import ARTIFACT_COLLECTIONS, jobs, put_vectors, vectors
from domain.ids import record_of
from domain.model import IngestJob, VectorRecord

INDEXING = "indexing"


class SqlIngestJobs:
    """Mixed into the artifact store (``_write``/``_read`` come from the metadata store)."""

    def start_job(self, job: IngestJob, request: Mapping[str, Any]) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            conn.execute(delete(jobs).where(jobs.c.artifact_id == job.artifact_id))
            conn.execute(insert(jobs).values(
                artifact_id=job.artifact_id, version=job.version, status=job.status, done=job.done, total=job.total,
                error=None, lease_owner=job.lease_owner, lease_until=job.lease_until, request=json.dumps(request)))

    def job_request(self, artifact_id: str) -> dict[str, Any] | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            raw = conn.execute(select(jobs.c.request).where(jobs.c.artifact_id == artifact_id)).scalar()
        return json.loads(raw) if raw else None

    def add_pending_vectors(self, job: IngestJob, collection: str, records: Sequence[VectorRecord]) -> bool:
        with self._write() as conn:  # type: ignore[attr-defined]
            held = conn.execute(update(jobs).where(
                jobs.c.artifact_id == job.artifact_id, jobs.c.version == job.version, jobs.c.status == INDEXING,
                jobs.c.lease_owner == job.lease_owner).values(done=job.done, lease_until=job.lease_until)).rowcount
            if not held:
                return False
            put_vectors(conn, collection, job.artifact_id, records, pending=True)
        return True

    def embedded_records(self, artifact_id: str, version: str) -> set[str]:
        with self._read() as conn:  # type: ignore[attr-defined]
            ids = conn.execute(select(vectors.c.id).where(
                vectors.c.collection.in_(ARTIFACT_COLLECTIONS), vectors.c.owner == artifact_id,
                vectors.c.version == version, vectors.c.pending.is_(True))).scalars().all()
        return {record_of(i) for i in ids}

    def ingest_job(self, artifact_id: str) -> IngestJob | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(jobs).where(jobs.c.artifact_id == artifact_id)).first()
        return _job(row) if row is not None else None

    def claim_job(self, artifact_id: str, version: str, worker: str, lease_until: float,
                  now: float) -> IngestJob | None:
        with self._write() as conn:  # type: ignore[attr-defined]
            taken = conn.execute(update(jobs).where(
                jobs.c.artifact_id == artifact_id, jobs.c.version == version, jobs.c.status == INDEXING,
                (jobs.c.lease_until < now) | (jobs.c.lease_owner == worker),
            ).values(lease_owner=worker, lease_until=lease_until)).rowcount
            row = conn.execute(select(jobs).where(jobs.c.artifact_id == artifact_id)).first() if taken else None
        return _job(row) if row is not None else None

    def open_jobs(self) -> list[IngestJob]:
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(jobs).where(jobs.c.status == INDEXING).order_by(jobs.c.artifact_id)).all()
        return [_job(row) for row in rows]


def _job(row: object) -> IngestJob:
    return IngestJob(row.artifact_id, row.version, row.status, row.done, row.total, row.error,  # type: ignore[attr-defined]
                     row.lease_owner, row.lease_until)  # type: ignore[attr-defined]
