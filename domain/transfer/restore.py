"""One export record checked, and the write that puts it back: the import's step (domain/transfer)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from domain.artifacts.ingest import IngestArtifact
from domain.artifacts.input import IngestRequest, validate
from domain.chunking import content_hash
from domain.access.rules import expiry
from domain.access.principal import check_name
from domain.documents.model import DOC_CLASSES, MAX_CONTENT as DOCUMENT_MAX, SOURCE as DOCUMENTS
from domain.documents.model import check_canonical_key, check_kind, check_tags
from domain.documents.usecases import ItemWriter
from domain.graph.model import Relation
from domain.graph.usecases import COLLECTION as GRAPH, entities_of, relation_label, relations_of
from domain.common import audit
from domain.ports.documents import DocumentStore, ItemVersion
from domain.ports.graph import GraphStore
from domain.sessions.scope import SOURCE as SESSIONS
from domain.errors import ValidationError
from domain.history.usecases import MAX_TURN_INDEX, AppendTurn, AppendTurnRequest
from domain.ids import MEMORY_ID, artifact_id
from domain.memories.usecases import StoreMemory, StoreMemoryRequest
from domain.memories.validity import FIELDS as VALIDITY
from domain.model import ROLES, RequestContext
from domain.ports import ArtifactScopes, MetadataStore
from domain.transfer.fields import ACCESS, FIELDS, ITEM_ID, LINKS, SAME_VERSION, as_record, labels_of, privacy, same
from domain.transfer.links import PENDING, Link, problems
from domain.transfer.records import KINDS
from domain.validation import (
    epoch, iso, optional_text, optional_time, parse_timestamp, require_choice, require_id, require_int, require_text,
)

@dataclass(frozen=True, slots=True)
class Step:
    write: Callable[[], bool] | None  # None: nothing to write; else the write (True: something added)
    status: str = "new"  # "new", "unchanged" (stored as it is) or "expired" (its retention ran out: left out)


@dataclass(frozen=True, slots=True)
class Restorer:
    store: MetadataStore
    scopes: ArtifactScopes
    store_memory: StoreMemory
    append_turn: AppendTurn
    ingest: IngestArtifact
    documents: DocumentStore
    writer: ItemWriter
    graph: GraphStore
    context: RequestContext
    now: float
    ids: dict[str, str] = field(default_factory=dict)  # a file's memory id -> the id it is stored under
    planned_versions: dict[tuple[str, str], int] = field(default_factory=dict)  # this batch's, per item
    links: dict[str, Link] = field(default_factory=dict)  # this batch's memories' links, by stored id

    def plan(self, record: object, line: int) -> Step:
        """The record checked (a ValidationError names the line and the field), and its write."""
        try:
            if not isinstance(record, dict):
                raise ValidationError("record", "a record must be a JSON object")
            kind = require_choice("kind", record.get("kind"), KINDS)
            unknown = sorted(set(record) - FIELDS[kind])
            if unknown:
                raise ValidationError(unknown[0], f"{unknown[0]} is not a field of a {kind} record")
            if kind == "memory":
                return self._memory(record, line)
            steps = (self._turn, self._artifact, self._document, self._entity, self._relation)
            return steps[KINDS.index(kind) - 1](record)
        except ValidationError as exc:
            raise ValidationError(exc.field, f"line {line}: {exc.message} (field {exc.field}): nothing was "
                                             "imported") from None

    def check_links(self, pending: set[str]) -> None:
        """The batch's memories' links checked as a whole (domain/transfer/links.py), against the memories
        the caller stored and those ``pending`` (of the same import, in its other calls)."""
        stored: dict[str, Link | None] = {}

        def resolve(memory_id: str) -> Link | str | None:
            if memory_id in self.links:
                return self.links[memory_id]
            if memory_id in pending:
                return PENDING
            if memory_id not in stored:
                found = self.store.get_memories([memory_id]).get(memory_id)
                mine = found is not None and found.owner == self.context.actor and found.expires_epoch > self.now
                stored[memory_id] = Link(memory_id, **{n: getattr(found, n) for n in VALIDITY}) if mine else None
            return stored[memory_id]

        for link, name, message in problems(sorted(self.links.values(), key=lambda x: x.line), resolve):
            for given, placed in self.ids.items():  # the file's ids, as the caller wrote them
                if given != placed:
                    message = message.replace(placed, given)
            raise ValidationError(name, f"line {link.line}: {message} (field {name}): nothing was imported")

    def _expired(self, record: dict[str, Any], ts: str) -> bool:
        """Whether the record's retention ran out since it was written (left out, not refused)."""
        policy = privacy(record).checked()["retention_policy"]
        return expiry(policy, epoch(ts), record.get("retention_days")) <= self.now

    def _memory(self, record: dict[str, Any], line: int) -> Step:
        """A memory under the id ``ids`` gives it (domain/transfer/owned.py), its links following their
        memories' ids; its links are noted (``links``) for the import's check of them as a whole."""
        given = require_id("id", record.get("id"), "mem_", MEMORY_ID, "32 hex characters")
        ts = parse_timestamp("ts", record.get("ts"))
        confidence = record.get("confidence")
        if isinstance(confidence, float) and not math.isfinite(confidence):
            raise ValidationError("confidence", f"confidence is not a finite number (got {confidence})")
        kept = {name: record[name] for name in VALIDITY if record.get(name) is not None}  # its valid time, as it was
        for name, value in kept.items():
            if name in LINKS:
                kept[name] = self.ids[require_id(name, value, "mem_", MEMORY_ID, "32 hex characters")]
            else:
                optional_time(name, value)
        memory_id = self.ids[given]
        self.links[memory_id] = Link(memory_id, line=line, **kept)
        if self._expired(record, ts):
            return Step(None, "expired")
        request = StoreMemoryRequest(record.get("content"), record.get("type"), record.get("confidence"),  # type: ignore[arg-type]
                                     record.get("conversation_id"), privacy(record))
        memory = self.store_memory.write(request, memory_id, ts, check_only=True, kept=kept)
        existing = self.store.get_memories([memory_id]).get(memory_id)  # the caller's own, if any (owned.py)
        if existing is not None:
            if same(existing, memory, ("owner", "content", "type", "confidence", "ts", "conversation_id", *ACCESS)):
                # What the store keeps is the stored one, links and all: the import's links are checked with it.
                self.links[memory_id] = Link(memory_id, line=line, **{n: getattr(existing, n) for n in VALIDITY})
                return Step(None, "unchanged")
            shown = given if memory_id == given else f"{given} (yours as {memory_id})"
            raise ValidationError("id", f"memory {shown} is already stored with other content")
        return Step(lambda: bool(self.store_memory.write(request, memory_id, ts, kept=kept)))

    def _turn(self, record: dict[str, Any]) -> Step:
        conversation = require_text("conversation_id", record.get("conversation_id"), 100)
        index = require_int("turn_index", record.get("turn_index"), 0, MAX_TURN_INDEX)
        role = require_choice("role", record.get("role"), ROLES)
        content = require_text("content", record.get("content"), 50_000)
        ts = parse_timestamp("ts", record.get("ts"))
        if self._expired(record, ts):
            return Step(None, "expired")
        rights = privacy(record)
        access = rights.written(self.context, epoch(ts), self.now)
        mine = self.context.principal.user_id
        existing = self.store.get_turn(mine, conversation, index)
        if existing is not None and existing.content_hash == content_hash(content) and existing.role == role \
                and existing.ts == ts and all(getattr(existing, k) == access[k] for k in ("owner", *ACCESS)):
            return Step(None, "unchanged")
        if existing is not None:  # the caller's own conversation of that id (another's is never looked at)
            raise ValidationError("turn_index", f"turn {index} of your conversation {conversation!r} is already "
                                                "stored with other content")
        request = AppendTurnRequest(conversation, role, content, index, ts, rights)
        return Step(lambda: self.append_turn(request).status != "unchanged")

    def _artifact(self, record: dict[str, Any]) -> Step:
        if record.get("source_system") == DOCUMENTS:
            raise ValidationError("source_system", "project documents (source system documents) are not imported")
        chunked = record.get("chunked", True)
        if not isinstance(chunked, bool):
            raise ValidationError("chunked", "chunked must be true or false")
        request = IngestRequest(
            artifact_type=record.get("artifact_type"), source_system=record.get("source_system"),  # type: ignore[arg-type]
            content=record.get("content"), source_id=record.get("source_id"),  # type: ignore[arg-type]
            source_url=record.get("source_url"), title=record.get("title"), author=record.get("author"),
            participants=record.get("participants"), ts=parse_timestamp("ts", record.get("ts")),
            sensitivity=record.get("sensitivity", "normal"), visibility_scope=record.get("visibility_scope", "me"),
            retention_policy=record.get("retention_policy", "forever"), chunker=record.get("chunker"),
            labels=labels_of(record.get("labels")), visible_to=record.get("visible_to"),
            # Kept whole as it was only where its toolset keeps it whole (the sessions' unchunked kinds):
            # elsewhere "not chunked" only means short enough for the model that stored it.
            keep_whole=not chunked and record.get("source_system") == SESSIONS,
            retention_days=record.get("retention_days"))
        fields = validate(request)
        if self._expired(record, fields["ts"]):
            return Step(None, "expired")
        access = privacy(record).written(self.context, epoch(fields["ts"]), self.now)
        digest = content_hash(fields["content"])
        art_id = artifact_id(fields["source_system"], fields["source_id"], digest, self.context.principal.user_id)
        existing = self.store.get_artifact(art_id)
        if existing is not None:
            if existing.content_hash == digest and existing.ts == fields["ts"] and existing.labels == fields["labels"] \
                    and existing.artifact_type == fields["artifact_type"] \
                    and all(getattr(existing, k) == access[k] for k in ("owner", *ACCESS)):
                return Step(None, "unchanged")
            raise ValidationError("content", f"artifact {art_id} ({fields['source_system']}:{fields['source_id']}) "
                                             "is already stored with other content or privacy")
        return Step(lambda: self.ingest(request).status != "unchanged")

    def _document(self, record: dict[str, Any]) -> Step:
        """A project document's version: the caller must work in its project; the versions of an item
        come in order (a later one may wait for earlier ones in the file); one stored as it is adds nothing."""
        project = check_name("project", record.get("project"))
        if not self.context.principal.in_project(project):
            raise ValidationError("project", f"This caller may not work in project {project!r}")
        item_id = require_id("item_id", record.get("item_id"), "doc_", ITEM_ID, "32 hex characters")
        number = require_int("version_num", record.get("version_num"), 1, 1_000_000)
        key = record.get("canonical_key")
        doc_class = record.get("doc_class")
        pinned, meta = record.get("pinned", False), record.get("meta", {})
        if not isinstance(pinned, bool):
            raise ValidationError("pinned", "pinned must be true or false")
        if not isinstance(meta, dict):
            raise ValidationError("meta", "meta must be an object")
        content = require_text("content", record.get("content"), DOCUMENT_MAX)
        version = ItemVersion(
            project=project, item_id=item_id, version_num=number, kind=check_kind(record.get("item_kind")),
            title=require_text("title", record.get("title"), 500), content=content,
            content_hash=content_hash(content), created_at=parse_timestamp("created_at", record.get("created_at")),
            canonical_key=None if key is None else check_canonical_key(key),
            doc_class=None if doc_class is None else require_choice("doc_class", doc_class, DOC_CLASSES),
            tags=check_tags(record.get("tags", [])), pinned=pinned,
            status=require_choice("status", record.get("status", "active"), ("active", "archived")),
            session_id=optional_text("session_id", record.get("session_id"), 200), meta=meta)
        existing = self.documents.item_version(project, item_id, number)
        if existing is not None:
            if same(existing, version, SAME_VERSION):
                return Step(None, "unchanged")
            raise ValidationError("version_num", f"version {number} of item {item_id} in project {project} is "
                                                 "already stored with other content")
        latest = self.documents.item_version(project, item_id)
        stored = max(latest.version_num if latest else 0, self.planned_versions.get((project, item_id), 0))
        if number <= stored:
            raise ValidationError("version_num", f"version {number} of item {item_id} in project {project} comes "
                                                 f"after version {stored} in this import: versions go in order")
        self.planned_versions[(project, item_id)] = number
        return Step(lambda: self.writer.restore(version))

    def _entity(self, record: dict[str, Any]) -> Step:
        """An entity of the caller's graph: new, or its missing observations added to the one of that name
        (of the same type: another type is refused)."""
        (entity,) = as_record(entities_of, {"name": record.get("name"), "entityType": record.get("entity_type"),
                                            "observations": record.get("observations", [])})
        owner = self.context.actor
        held = self.graph.entities(owner, [entity.name])
        if held and held[0].entity_type != entity.entity_type:
            raise ValidationError("entity_type", f"entity {entity.name!r} is already stored with type "
                                                 f"{held[0].entity_type!r}")
        if held and set(entity.observations) <= set(held[0].observations):
            return Step(None, "unchanged")
        entry = audit("import", GRAPH, [entity.name], iso(self.now), self.context, item="entity")

        def write() -> bool:
            if not held:
                return bool(self.graph.create_entities(owner, [entity], entry))
            added = self.graph.add_observations(owner, [(entity.name, list(entity.observations))], entry)
            return not isinstance(added, str) and any(new for _, new in added)
        return Step(write)

    def _relation(self, record: dict[str, Any]) -> Step:
        (relation,) = as_record(relations_of, {"from": record.get("from"), "to": record.get("to"),
                                               "relationType": record.get("relation_type")})
        owner = self.context.actor
        if relation in self.graph.relations(owner, [relation.source]):
            return Step(None, "unchanged")
        entry = audit("import", GRAPH, [relation_label(relation)], iso(self.now), self.context, item="relation")
        return Step(lambda: bool(self.graph.create_relations(owner, [Relation(relation.source, relation.target,
                                                                              relation.relation_type)], entry)))
