"""Spec 004's writes and reads of project items: commit, canonical upsert, get, outline, section."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest
from domain.chunking import content_hash
from domain.common import Clock, utc_now
from domain.documents.idempotency import Idempotent, check_key
from domain.documents.model import (DOC_CLASSES, MAX_CONTENT, SOURCE, Section, artifact_labels, canonical_item_id,
                                    check_canonical_key, check_kind, check_tags, entry_item_id, sections_of)
from domain.errors import MemtroveError, NotFoundError, ValidationError
from domain.model import ChunkSpec
from domain.ports import ChunkerCatalog, Tokenizer
from domain.ports.documents import DocumentStore, ItemVersion
from domain.validation import MAX_INT64, optional_text, require_choice, require_int, require_text

MAX_ENTRIES = 50
DEFAULT_CLASS = {"spec": "feature_spec", "plan": "implementation_plan"}


@dataclass(frozen=True, slots=True)
class ItemWriter:
    """A new version in the document store (the truth), then its artifact (what every search reads)."""

    documents: DocumentStore
    ingest: IngestArtifact
    clock: Clock = utc_now

    def write(self, draft: ItemVersion) -> tuple[ItemVersion, str]:
        """The version as stored and what happened: created, updated or unchanged (same as the latest)."""
        latest = self.documents.item_version(draft.project, draft.item_id)
        same = ("kind", "title", "content_hash", "canonical_key", "doc_class", "tags", "pinned", "status")
        if latest is not None and all(getattr(latest, f) == getattr(draft, f) for f in same):
            self.project(latest)  # a no-op when indexed; indexes it when an earlier write stopped before
            return latest, "unchanged"
        stored = self.documents.add_version(replace(draft, created_at=self.clock()))
        # The item's newest version as the store has it now (another writer may have added a later one):
        # the index never goes back to an older version.
        self.project(self.documents.item_version(stored.project, stored.item_id) or stored)
        return stored, "created" if stored.version_num == 1 else "updated"

    def project(self, version: ItemVersion) -> None:
        self.ingest(IngestRequest("doc", SOURCE, version.content, source_id=f"{version.project}/{version.item_id}",
                                  title=version.title, labels=artifact_labels(version), chunker="markdown",
                                  shared_with=(f"p:{version.project}", "p:*")))
        self.documents.mark_projected(version.project, version.item_id, version.version_num)

    def restore(self, version: ItemVersion) -> bool:
        """An exported version back in, its number and time kept: it must be the item's next version
        (an export lists them in order). Then the item's newest version is its artifact."""
        latest = self.documents.item_version(version.project, version.item_id)
        expected = (latest.version_num if latest else 0) + 1
        if version.version_num != expected:
            raise ValidationError("version_num", f"version {version.version_num} of item {version.item_id} in "
                                                 f"project {version.project} comes before its version {expected}: "
                                                 "import the file whole, in its order")
        stored = self.documents.add_version(version)
        self.project(self.documents.item_version(stored.project, stored.item_id) or stored)
        return True

    def project_pending(self, before: float, limit: int = 50) -> tuple[int, list[tuple[ItemVersion, Exception]]]:
        """The background repair: the newest version of each item whose write stopped between its version
        and its artifact (created at or before ``before``) becomes its artifact. How many were written,
        and the ones that failed again (they stay pending for the next round)."""
        done, failed, seen = 0, [], set()
        for pending in self.documents.unprojected(before, limit):
            if (pending.project, pending.item_id) in seen:
                continue  # its newest version was just written
            seen.add((pending.project, pending.item_id))
            newest = self.documents.item_version(pending.project, pending.item_id) or pending
            try:
                self.project(newest)
            except MemtroveError as exc:
                failed.append((newest, exc))
                continue
            done += 1
        return done, failed


def shown(version: ItemVersion, status: str | None = None) -> dict[str, Any]:
    body = {"itemId": version.item_id, "versionNum": version.version_num, "kind": version.kind,
            "title": version.title, "canonicalKey": version.canonical_key, "docClass": version.doc_class,
            "tags": list(version.tags), "pinned": version.pinned, "contentHash": version.content_hash,
            "createdAt": version.created_at}
    return {**body, "status": status} if status else body


def draft(project: str, item_id: str, kind: str, title: str, content: str, tags: tuple[str, ...],
          canonical_key: str | None = None, doc_class: str | None = None, session_id: str | None = None) -> ItemVersion:
    return ItemVersion(project, item_id, 0, kind, title, content, content_hash(content), "", canonical_key,
                       doc_class, tags, pinned=canonical_key is not None, session_id=session_id)


@dataclass(frozen=True, slots=True)
class CommitEntries:
    """memory_commit: entries as new items (or new versions of the canonical document they name)."""

    writer: ItemWriter
    idempotent: Idempotent

    def __call__(self, project: str, idempotency_key: object, entries: object,
                 session_id: object = None) -> dict[str, Any]:
        key = check_key(idempotency_key)
        session = optional_text("sessionId", session_id, 200, label="sessionId")
        if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_ENTRIES:
            raise ValidationError("entries", f"entries must be a list of 1-{MAX_ENTRIES} objects")
        drafts = [self._draft(project, key, n, e, session) for n, e in enumerate(entries)]

        def commit() -> dict[str, Any]:
            written = [self.writer.write(d) for d in drafts]
            return {"items": [shown(v, status) for v, status in written], "sessionId": session}
        return self.idempotent(project, key, "memory_commit", {"entries": entries, "sessionId": session}, commit)

    @staticmethod
    def _draft(project: str, key: str, n: int, entry: object, session: str | None) -> ItemVersion:
        if not isinstance(entry, dict):
            raise ValidationError(f"entries[{n}]", f"entries[{n}] must be an object")
        unknown = sorted(set(entry) - {"kind", "title", "content", "canonicalKey", "tags", "docClass"})
        if unknown:
            raise ValidationError(f"entries[{n}].{unknown[0]}", f"entries[{n}]: unknown field {unknown[0]!r}")
        kind = check_kind(entry.get("kind"))
        title = require_text(f"entries[{n}].title", entry.get("title"), 500, label="title")
        content = require_text(f"entries[{n}].content", entry.get("content"), MAX_CONTENT, label="content")
        tags = check_tags(entry.get("tags"), f"entries[{n}].tags")
        if entry.get("canonicalKey") is None:
            return draft(project, entry_item_id(project, key, n), kind, title, content, tags, session_id=session)
        canonical = check_canonical_key(entry["canonicalKey"])
        doc_class = require_choice("docClass", entry.get("docClass") or DEFAULT_CLASS.get(kind, "feature_spec"),
                                   DOC_CLASSES)
        return draft(project, canonical_item_id(project, canonical), kind, title, content, tags, canonical,
                     doc_class, session)


@dataclass(frozen=True, slots=True)
class UpsertCanonical:
    """canonical_upsert: a new version of the project's canonical document of that key (1 when new)."""

    writer: ItemWriter
    idempotent: Idempotent

    def __call__(self, project: str, canonical_key: object, doc_class: object, title: object, content: object,
                 tags: object = None, idempotency_key: object = None) -> dict[str, Any]:
        key = check_key(idempotency_key)
        canonical = check_canonical_key(canonical_key)
        kind_class = require_choice("docClass", doc_class, DOC_CLASSES)
        heading = require_text("title", title, 500, label="title")
        text = require_text("contentMarkdown", content, MAX_CONTENT, label="contentMarkdown")
        labels = check_tags(tags)
        kind = "plan" if kind_class == "implementation_plan" else "spec"
        version = draft(project, canonical_item_id(project, canonical), kind, heading, text, labels, canonical,
                        kind_class)
        payload = {"canonicalKey": canonical, "docClass": kind_class, "title": heading, "hash": version.content_hash,
                   "tags": list(labels)}

        def upsert() -> dict[str, Any]:
            stored, status = self.writer.write(version)
            return shown(stored, status)
        return self.idempotent(project, key, "canonical_upsert", payload, upsert)


@dataclass(frozen=True, slots=True)
class ReadCanonical:
    """canonical_get / canonical_outline / canonical_get_section: a version (the newest by default),
    its section tree and the exact text of one section, all from the document store."""

    documents: DocumentStore
    chunkers: ChunkerCatalog
    spec: ChunkSpec
    tokenizer: Tokenizer

    def version(self, project: str, canonical_key: object, version_num: object = None) -> ItemVersion:
        key = check_canonical_key(canonical_key)
        number = None if version_num is None else require_int("versionNum", version_num, 1, MAX_INT64)
        found = self.documents.item_version(project, canonical_item_id(project, key), number)
        if found is None:
            which = f"version {number} of " if number is not None else ""
            raise NotFoundError(f"No {which}canonical document {key!r} in this project")
        return found

    def outline(self, version: ItemVersion) -> list[Section]:
        chunker = self.chunkers.get("markdown")
        if chunker is None:
            raise NotFoundError("The markdown chunker is not available")
        return sections_of(chunker.chunk(version.content, self.spec, self.tokenizer), len(version.content))

    def section(self, project: str, canonical_key: object, anchor: object) -> tuple[ItemVersion, Section, str]:
        wanted = require_text("sectionAnchor", anchor, 500, label="sectionAnchor")
        version = self.version(project, canonical_key)
        sections = self.outline(version)
        for found in sections:
            if found.anchor == wanted:
                return version, found, version.content[found.start:found.end]
        known = ", ".join(s.anchor for s in sections[:12])
        raise NotFoundError(f"No section {wanted!r} in {version.canonical_key!r} (anchors: {known}"
                            f"{', ...' if len(sections) > 12 else ''})")


def in_order(sections: Sequence[Section], chosen: set[str]) -> list[Section]:
    return [s for s in sections if s.anchor in chosen]
