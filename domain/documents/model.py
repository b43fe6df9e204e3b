"""Spec 004's project items: kinds, ids, the artifact each current version is projected to, sections.

Every version of an item is kept in the DocumentStore (the truth: canonical_get reads it); the
current version is also an artifact (source system ``documents``) labelled with its project, kind,
canonical key, class, pin and status, so hybrid_search, re-embedding, repair and delete treat it
like any other artifact.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from domain.errors import ValidationError
from domain.model import Chunk
from domain.ports.documents import ItemVersion
from domain.search.filters import check_tags as tag_list
from domain.validation import require_choice, require_text

SOURCE = "documents"
KINDS = ("spec", "plan", "decision", "troubleshooting", "note")
DOC_CLASSES = ("app_spec", "feature_spec", "implementation_plan")
MAX_CONTENT = 1_000_000  # characters of Markdown per item version
CANONICAL_KEY = re.compile(r"\A[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*\Z")


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def canonical_item_id(project: str, key: str) -> str:
    return f"doc_{digest('canonical', project, key)[:32]}"


def entry_item_id(project: str, idempotency_key: str, index: int) -> str:
    """A committed entry's item: the same key and position name the same item (replays write nothing new)."""
    return f"doc_{digest('entry', project, idempotency_key, index)[:32]}"


def check_kind(value: object) -> str:
    return require_choice("kind", value, KINDS)


def check_canonical_key(value: object) -> str:
    key = require_text("canonicalKey", value, 200, label="canonicalKey")
    if not CANONICAL_KEY.match(key):
        raise ValidationError("canonicalKey", f"canonicalKey {key!r} must be lowercase words separated by '/' "
                                              "(letters, digits, '.', '_', '-'), e.g. \"app\" or \"feature/auth\"")
    return key


def check_tags(value: object, field: str = "tags") -> tuple[str, ...]:
    """Spec 004's tags: a list (no single string), checked as every other tag list is."""
    if isinstance(value, str):
        raise ValidationError(field, f"{field} must be a list of strings")
    return tuple(tag_list(value, field))


def artifact_labels(version: ItemVersion) -> dict[str, Any]:
    """What the current version's artifact is filed by (each a filter inside both indexes)."""
    labels: dict[str, Any] = {"project": version.project, "kind": version.kind, "title": version.title[:500],
                              "pinned": "true" if version.pinned else "false", "status": version.status,
                              "version_num": str(version.version_num), "tags": list(version.tags)}
    if version.canonical_key:
        labels["canonical_key"] = version.canonical_key
        labels["doc_class"] = version.doc_class or ""
    return labels


@dataclass(frozen=True, slots=True)
class Section:
    """A heading's section of a Markdown document: ``text[start:end]`` holds its heading and its own
    text up to the next heading (subsections are sections of their own)."""

    anchor: str
    heading_path: tuple[str, ...]
    level: int
    start: int
    end: int

    def as_outline(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "title": self.heading_path[-1] if self.heading_path else "",
                "level": self.level, "heading_path": list(self.heading_path), "start_char": self.start,
                "end_char": self.end}


def sections_of(chunks: list[Chunk], length: int) -> list[Section]:
    """Sections from the Markdown chunker's chunks (each chunk lies in one section: its anchor and
    heading path), in document order; they tile the text."""
    found: list[Section] = []
    for chunk in chunks:
        anchor = str(chunk.metadata.get("section_anchor") or "h0:")
        if found and found[-1].anchor == anchor:
            continue
        level = int(anchor[1]) if re.match(r"h\d:", anchor) else 0
        found.append(Section(anchor if anchor != "h0:" else "root", tuple(chunk.metadata.get("heading_path") or ()),
                             level, chunk.start_char, chunk.end_char))
    tiled = [Section(s.anchor, s.heading_path, s.level, s.start, found[i + 1].start if i + 1 < len(found) else length)
             for i, s in enumerate(found)]
    return tiled
