"""memtrove's export format, version 1: one JSON object a line (JSON Lines, UTF-8).

The first line is ``{"memtrove_export": 1}``; then one record a line, memories first (newest first),
then conversation turns (by conversation, then turn), then artifacts (newest first), then every
version of every project document (spec 004's items: by project, item, version; a project's items
are the project's, so a caller exports those of its projects), then the caller's knowledge graph:
its entities (with their observations) and its relations, in the order they were made. Every record
but a document's or the graph's
has ``kind`` (``memory``, ``turn``, ``artifact``), its own fields, and the privacy its writer gave it:
``sensitivity``, ``visibility_scope``, ``retention_policy``, ``visible_to`` (``custom`` only: user
ids and ``team:<name>``), ``retention_days`` (``custom`` retention only). An artifact carries its
whole text (``content``), its labels (the sessions' and Zapomni's scope, tags), the chunker that cut
it and whether it is ``chunked``; on import it is cut again by that chunker, so its chunks are the
same. Nothing in a record depends on the moment of the export: the same store exports the same file.
"""

from __future__ import annotations

from typing import Any

from domain.access.rules import NEVER
from domain.graph.model import Entity, Relation
from domain.memories.validity import validity
from domain.model import Artifact, Memory, Owned, Turn
from domain.ports.documents import ItemVersion
from domain.validation import epoch

FORMAT = "memtrove_export"
VERSION = 1
HEADER = {FORMAT: VERSION}
KINDS = ("memory", "turn", "artifact", "document", "entity", "relation")


def privacy_of(item: Owned, ts: str) -> dict[str, Any]:
    """The privacy the item was written with, as its writer gave it (the inverse of Privacy.written)."""
    fields: dict[str, Any] = {"sensitivity": item.sensitivity, "visibility_scope": item.visibility_scope,
                              "retention_policy": item.retention_policy}
    if item.visibility_scope == "custom":
        mine = f"u:{item.owner}"
        fields["visible_to"] = sorted(f"team:{k[2:]}" if k.startswith("t:") else k[2:]
                                      for k in item.acl if k != mine and k[:2] in ("u:", "t:"))
    if item.retention_policy == "custom" and item.expires_epoch < NEVER:
        fields["retention_days"] = round((item.expires_epoch - epoch(ts)) / 86_400)
    return fields


def memory_record(m: Memory) -> dict[str, Any]:
    return {"kind": "memory", "id": m.id, "type": m.type, "confidence": m.confidence, "ts": m.ts,
            "conversation_id": m.conversation_id, **privacy_of(m, m.ts), **validity(m), "content": m.content}


def turn_record(t: Turn) -> dict[str, Any]:
    return {"kind": "turn", "conversation_id": t.conversation_id, "turn_index": t.turn_index, "role": t.role,
            "ts": t.ts, **privacy_of(t, t.ts), "content": t.content}


def artifact_record(a: Artifact, content: str) -> dict[str, Any]:
    return {"kind": "artifact", "id": a.id, "artifact_type": a.artifact_type, "source_system": a.source_system,
            "source_id": a.source_id, "source_url": a.source_url, "title": a.title, "author": a.author,
            "participants": list(a.participants), "ts": a.ts, "chunker": a.chunker, "chunked": a.is_chunked,
            "labels": a.labels, **privacy_of(a, a.ts), "content": content}


def document_record(v: ItemVersion) -> dict[str, Any]:
    return {"kind": "document", "project": v.project, "item_id": v.item_id, "version_num": v.version_num,
            "item_kind": v.kind, "title": v.title, "created_at": v.created_at, "canonical_key": v.canonical_key,
            "doc_class": v.doc_class, "tags": list(v.tags), "pinned": v.pinned, "status": v.status,
            "session_id": v.session_id, "meta": v.meta, "content": v.content}


def entity_record(e: Entity) -> dict[str, Any]:
    return {"kind": "entity", "name": e.name, "entity_type": e.entity_type, "observations": list(e.observations)}


def relation_record(r: Relation) -> dict[str, Any]:
    return {"kind": "relation", "from": r.source, "to": r.target, "relation_type": r.relation_type}
