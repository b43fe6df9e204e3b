"""What artifact_ingest accepts: the request and its validation (the spec's limits and messages)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from domain.errors import ValidationError
from domain.access.privacy import Privacy
from domain.model import ARTIFACT_TYPES
from domain.validation import optional_text, parse_timestamp, require_choice, require_text

MAX_CONTENT = 10_000_000  # bytes of UTF-8: "10 MB" is a size, and a character can take up to 4 bytes


@dataclass(frozen=True, slots=True)
class IngestRequest:
    artifact_type: str
    source_system: str
    content: str
    source_id: str | None = None
    source_url: str | None = None
    title: str | None = None
    author: str | None = None
    participants: Sequence[str] | None = None
    ts: str | None = None
    sensitivity: str = "normal"
    visibility_scope: str = "me"
    retention_policy: str = "forever"
    chunker: str | None = None  # a chunker's name, or "auto" (by type and content); None: the configured one
    # Set by the toolsets that file by scope (already validated there): see Artifact.labels.
    labels: Mapping[str, Any] | None = None
    keep_whole: bool = False  # one record however long (its vectors are still cut to the model's reach)
    visible_to: Sequence[str] | None = None  # visibility custom: user ids and team:<name> entries
    retention_days: int | None = None  # retention custom: days after its timestamp
    # Set by a toolset whose items are shared rather than personal (project items: their project's
    # access keys): the artifact is then the server's (owner local), whoever writes it.
    shared_with: Sequence[str] | None = None


def validate(request: IngestRequest) -> dict[str, Any]:
    """Every field checked before anything is computed; the spec's messages."""
    if isinstance(request.content, str):
        size = utf8_size(request.content)
        if size > MAX_CONTENT:
            raise ValidationError("content", f"Content exceeds maximum size of 10MB (field 'content', "
                                             f"{MAX_CONTENT} bytes of UTF-8, got {size} bytes)")
    participants = request.participants
    if participants is not None:
        if not isinstance(participants, (list, tuple)) or not all(isinstance(p, str) for p in participants):
            raise ValidationError("participants", "participants must be a list of strings")
        if len(participants) > 100:
            raise ValidationError("participants", f"participants allows at most 100 items (got {len(participants)})")
        participants = [require_text("participants", p, 200) for p in participants]
    url = optional_text("source_url", request.source_url, 2000)
    if url is not None and not _is_url(url):
        raise ValidationError("source_url", f"Invalid source_url: {url!r} is not a URL (e.g. https://host/path)")
    return {
        "artifact_type": require_choice("artifact_type", request.artifact_type, ARTIFACT_TYPES),
        "source_system": require_text("source_system", request.source_system, 100),
        "content": require_text("content", request.content, MAX_CONTENT),
        "source_id": optional_text("source_id", request.source_id, 500),
        "source_url": url,
        "title": optional_text("title", request.title, 500),
        "author": optional_text("author", request.author, 200),
        "participants": tuple(participants or ()),
        "ts": parse_timestamp("ts", request.ts) if request.ts is not None else None,
        **Privacy(request.sensitivity, request.visibility_scope, request.retention_policy, request.visible_to,
                  request.retention_days).checked(),
        "labels": dict(request.labels or {}),
        "keep_whole": bool(request.keep_whole),
    }


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes, without encoding a pure-ASCII text (the common case)."""
    if text.isascii():  # O(1) in CPython (a flag of the string object): one byte per character
        return len(text)
    # surrogatepass: JSON may carry a lone surrogate ("\ud800"), which plain utf-8 refuses to encode.
    return len(text.encode("utf-8", "surrogatepass"))


def _is_url(value: str) -> bool:
    """A scheme, and a host for network schemes (mailto:, urn:, message-id: and file: need a path)."""
    parsed = urlsplit(value.strip())
    if not parsed.scheme or not parsed.scheme[0].isalpha() or any(c.isspace() for c in value.strip()):
        return False
    if parsed.scheme.lower() in ("http", "https", "ftp", "ftps", "ws", "wss"):
        return bool(parsed.hostname)
    return bool(parsed.netloc or parsed.path)
