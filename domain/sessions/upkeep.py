"""Spec 001's utility tools that write: export to a file, delete, clean up old memories."""

from __future__ import annotations

import json
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from domain.access.rules import may_change
from domain.artifacts.usecases import DeleteArtifact
from domain.common import Clock, audit, utc_now
from domain.access.principal import LOCAL_USER, Identity
from domain.errors import NotFoundError, ValidationError
from domain.model import Artifact, RequestContext
from domain.ports import ArtifactScopes, ArtifactStore, AuditLog, DocumentExporter
from domain.sessions.scope import KINDS, SOURCE
from domain.sessions.utility import EVERY, Reconstruct, session_artifact
from domain.search.usecases import check_flag
from domain.validation import format_ts, require_int, require_text


def check_output_path(value: object) -> str:
    """A relative path with no way out of the export directory (the exporter checks links on disk)."""
    path = require_text("output_path", value, 1_000, label="output_path")
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
        raise ValidationError("output_path", f"output_path must be relative to the export directory (got {path!r})")
    if ".." in parts:
        raise ValidationError("output_path", f"output_path must not contain '..' (got {path!r})")
    if not parts[-1] or parts[-1] == ".":
        raise ValidationError("output_path", f"output_path must name a file (got {path!r})")
    return path


def front_matter(artifact: Artifact) -> str:
    """YAML front matter (JSON scalars are valid YAML) naming the memory."""
    fields = {"memory_id": artifact.id, "title": artifact.title, "memory_type": artifact.labels.get("memory_type"),
              "agent_id": artifact.labels.get("agent_id"), "session_id": artifact.labels.get("session_id"),
              "session_iter": artifact.labels.get("session_iter"), "task_code": artifact.labels.get("task_code"),
              "chunk_count": artifact.num_chunks, "created_at": artifact.ts}
    lines = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items() if v is not None]
    return "---\n" + "\n".join(lines) + "\n---\n\n"


@dataclass(frozen=True, slots=True)
class ExportDocument:
    """The memory, reconstructed, as Markdown with front matter, written under the export directory."""

    store: ArtifactStore
    exporter: DocumentExporter
    identity: Identity = RequestContext

    def __call__(self, memory_id: object, output_path: object) -> tuple[Artifact, str, int]:
        path = check_output_path(output_path)
        user = self.identity().principal.user_id
        if user != LOCAL_USER:  # each caller its own folder: nobody overwrites, or learns of, another's files
            path = f"users/{user}/{path}"
        artifact, content = Reconstruct(self.store, self.identity)(memory_id)
        written, size = self.exporter.write(path, front_matter(artifact) + content)
        return artifact, written, size


@dataclass(frozen=True, slots=True)
class DeleteSessionMemory:
    """A session memory with its chunks, vectors and index entries (one transaction; the index follows)."""

    store: ArtifactStore
    delete: DeleteArtifact

    def __call__(self, memory_id: object) -> str:
        artifact = session_artifact(self.store, memory_id)
        self.delete(artifact.id)
        return artifact.id


@dataclass(frozen=True, slots=True)
class CleanupReport:
    memories: int
    chunks: int
    dry_run: bool
    cutoff: str


@dataclass(frozen=True, slots=True)
class CleanupOldMemories:
    """Session memories created before ``days_old`` days ago: counted (dry run, the default) or deleted,
    each delete audited, and the cleanup itself."""

    scopes: ArtifactScopes
    delete: DeleteArtifact
    audit_log: AuditLog
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)

    def __call__(self, days_old: object = 90, dry_run: object = True) -> CleanupReport:
        days = require_int("days_old", days_old, 0, 36_500)
        dry = check_flag("dry_run", dry_run)
        now = datetime.fromisoformat(self.clock().replace("Z", "+00:00")).astimezone(timezone.utc)
        cutoff = format_ts(now - timedelta(days=days))
        context = self.identity()
        # Session memories only (whoever else used the name), and the caller's own (or its projects').
        old = [a for a in self.scopes.list_artifacts(SOURCE, {}, EVERY, newest_first=False, before=cutoff)
               if a.labels.get("memory_type") in KINDS and may_change(a, context)]
        chunks = sum(a.num_chunks for a in old)
        if not dry:
            for artifact in old:
                with suppress(NotFoundError):  # deleted by another call meanwhile: gone either way
                    self.delete(artifact.id)
            self.audit_log.append(audit("cleanup", "artifact", [a.id for a in old], self.clock(), context,
                                        days_old=days, cutoff=cutoff, chunks=chunks))
        return CleanupReport(len(old), chunks, dry, cutoff)
