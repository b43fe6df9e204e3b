"""What each kind of export record holds, and the checks of its fields that are not a use case's own."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from domain.access.privacy import Privacy
from domain.errors import ValidationError
from domain.memories.validity import FIELDS as VALIDITY
from domain.model import LABEL_KEYS, TAGS

PRIVACY = ("sensitivity", "visibility_scope", "retention_policy", "visible_to", "retention_days")
LINKS = ("supersedes", "superseded_by")
ACCESS = ("acl", "sensitivity", "visibility_scope", "retention_policy", "expires_epoch")  # as stored
FIELDS = {
    "memory": {"kind", "id", "type", "confidence", "ts", "conversation_id", "content", *PRIVACY, *VALIDITY},
    "turn": {"kind", "conversation_id", "turn_index", "role", "ts", "content", *PRIVACY},
    "artifact": {"kind", "id", "artifact_type", "source_system", "source_id", "source_url", "title", "author",
                 "participants", "ts", "chunker", "chunked", "labels", "content", *PRIVACY},
    "document": {"kind", "project", "item_id", "version_num", "item_kind", "title", "created_at", "canonical_key",
                 "doc_class", "tags", "pinned", "status", "session_id", "meta", "content"},
    "entity": {"kind", "name", "entity_type", "observations"},
    "relation": {"kind", "from", "to", "relation_type"},
}
ITEM_ID = re.compile(r"\Adoc_[0-9a-f]{32}\Z")
SAME_VERSION = ("kind", "title", "content_hash", "created_at", "canonical_key", "doc_class", "tags", "pinned",
                "status", "session_id", "meta")


def same(stored: Any, wanted: Any, names: tuple[str, ...]) -> bool:
    return all(getattr(stored, n) == getattr(wanted, n) for n in names)


def privacy(record: dict[str, Any]) -> Privacy:
    return Privacy(record.get("sensitivity", "normal"), record.get("visibility_scope", "me"),
                   record.get("retention_policy", "forever"), record.get("visible_to"), record.get("retention_days"))


def labels_of(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or any(k not in (*LABEL_KEYS, TAGS) for k in value):
        raise ValidationError("labels", f"labels must be an object of {', '.join(LABEL_KEYS)} and {TAGS}")
    tags = value.get(TAGS, [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValidationError("labels", "labels.tags must be a list of strings")
    if any(not isinstance(v, (str, int, float, bool)) and v is not None for k, v in value.items() if k != TAGS):
        raise ValidationError("labels", "a label's value must be text, a number or true/false")
    return dict(value)


RECORD_FIELDS = {"entityType": "entity_type", "relationType": "relation_type"}


def as_record(read: Callable[[object], list[Any]], item: dict[str, Any]) -> list[Any]:
    """The graph tools' check of one item, its errors naming the record's own field."""
    try:
        return read([item])
    except ValidationError as exc:
        field = exc.field.split("].", 1)[-1].split("[")[0]
        named = RECORD_FIELDS.get(field, field)
        raise ValidationError(named, exc.message.replace(exc.field, named)) from None
