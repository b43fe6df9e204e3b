"""Storing spec 001's memories: one use case for the seven types, through the artifact ingest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from domain.artifacts.ingest import IngestArtifact, Progress
from domain.artifacts.input import IngestRequest
from domain.chunking import content_hash
from domain.model import Artifact
from domain.sessions.scope import KINDS, ORCHESTRATOR, SOURCE, check_content, first_heading, iteration_order
from domain.validation import optional_text, require_choice, require_text


@dataclass(frozen=True, slots=True)
class StoreSessionRequest:
    memory_type: str
    content: str
    session_id: str | None = None
    session_iter: str | None = None
    agent_id: str | None = None
    task_code: str | None = None
    title: str | None = None
    category: str | None = None


@dataclass(frozen=True, slots=True)
class StoredSessionMemory:
    artifact: Artifact
    chunks_created: int
    duplicate: bool  # the same content was already stored in this scope: this is that memory


@dataclass(frozen=True, slots=True)
class BeingStored:
    """The memory is being stored in the background: its id, how far its embedding got, its chunks (None
    while they are cut), and whether another call had begun it (a duplicate) or took this call's over."""

    memory_id: str
    done: int
    total: int
    chunks: int | None
    duplicate: bool


@dataclass(frozen=True, slots=True)
class StoreSessionMemory:
    """Validate the scope, then ingest: chunked types by the Markdown chunker, the others whole."""

    ingest: IngestArtifact

    def __call__(self, request: StoreSessionRequest,
                 progress: Progress | None = None) -> StoredSessionMemory | BeingStored:
        return self.run(self.plan(request), progress)

    def run(self, planned: IngestRequest, progress: Progress | None = None) -> StoredSessionMemory | BeingStored:
        """Ingest a planned memory (``progress`` hears how far its embedding got)."""
        result = self.ingest(planned, progress)
        job = result.job
        if job is not None:  # being stored by another call (or it took this call's work over)
            chunks = result.artifact.num_chunks if result.artifact is not None else None
            return BeingStored(job.artifact_id, job.done, job.total, chunks, result.joined)
        artifact = result.settled()
        return StoredSessionMemory(artifact, artifact.num_chunks, result.status == "unchanged")

    def plan(self, request: StoreSessionRequest) -> IngestRequest:
        """The memory's scope checked (bad input refused before anything runs) and its ingest request."""
        memory_type = require_choice("memory_type", request.memory_type, tuple(KINDS))
        kind = KINDS[memory_type]
        content = check_content(request.content)
        labels: dict[str, str] = {"memory_type": memory_type}
        if kind.session_scoped:
            labels["session_id"] = require_text("session_id", request.session_id, 200, label="session_id")
            check = require_text if kind.orchestrator else optional_text
            iteration = check("session_iter", request.session_iter, 100, label="session_iter")
            if iteration is not None:
                labels["session_iter"] = iteration
                labels["iter_order"] = iteration_order(iteration) or ""
        labels["agent_id"] = (ORCHESTRATOR if kind.orchestrator
                              else require_text("agent_id", request.agent_id, 200, label="agent_id"))
        task = optional_text("task_code", request.task_code, 200, label="task_code")
        if task is not None:
            labels["task_code"] = task
        if memory_type == "knowledge_base":
            labels["category"] = optional_text("category", request.category, 200, label="category") or "general"
            title: str | None = require_text("title", request.title, 500, label="title")
        else:
            title = optional_text("title", request.title, 500, label="title") or first_heading(content)
        if title is not None:
            labels["title"] = title
        # The same content in the same scope is the same memory: its id is derived from both.
        scope = json.dumps([labels, title, content_hash(content)], sort_keys=True)
        source_id = hashlib.sha256(scope.encode()).hexdigest()
        return IngestRequest("note", SOURCE, content, source_id=source_id, title=title, author=labels["agent_id"],
                             labels=labels, keep_whole=not kind.chunked, chunker="markdown" if kind.chunked else None)
