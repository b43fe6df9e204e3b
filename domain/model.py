"""Frozen value objects of the domain: profiles, memories, turns, chunks and hits."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.access.principal import LOCAL_USER, RequestContext  # noqa: F401 - re-exported: who is asking
from domain.access.rules import NEVER

Vector = list[float]

MEMORY_TYPES = ("preference", "fact", "project", "decision")
ROLES = ("user", "assistant", "system")


@dataclass(frozen=True, slots=True)
class EmbeddingProfile:
    """What produced a vector: vectors of different profiles are never compared."""

    provider: str
    model: str
    dimensions: int
    max_tokens: int  # the most tokens (in the model's own units) it reads without truncating

    @property
    def key(self) -> str:
        """A stable, collection-name-safe identifier of the profile."""
        raw = f"{self.provider}-{self.model}-{self.dimensions}"
        return "".join(c if c.isalnum() else "-" for c in raw.lower())

    def as_metadata(self) -> dict[str, Any]:
        return {
            "embedding_provider": self.provider,
            "embedding_model": self.model,
            "embedding_dimensions": self.dimensions,
        }


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """How big the pieces of a text may be, in tokenizer tokens."""

    target_tokens: int
    overlap_tokens: int
    single_piece_max_tokens: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """A slice of a text: ``text[start_char:end_char] == content`` always holds."""

    index: int
    start_char: int
    end_char: int
    content: str
    token_count: int
    content_hash: str
    # What a structure-aware chunker knows of the chunk (JSON values): heading_path, section_anchor,
    # speaker, ts, headers, qualified_name... ``indexed: False`` keeps it out of both indexes
    # (quoted email history, signatures) while it still rebuilds the text.
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Owned:
    """Who may see an item (domain.access.rules): owner, audience keys, privacy fields, expiry (keyword-only)."""

    owner: str = LOCAL_USER
    acl: tuple[str, ...] = (f"u:{LOCAL_USER}",)
    sensitivity: str = "normal"
    visibility_scope: str = "me"
    retention_policy: str = "forever"
    expires_epoch: float = NEVER


@dataclass(frozen=True, slots=True)
class Memory(Owned):
    """A small durable item: a preference, fact, project or decision."""

    id: str
    content: str
    type: str
    confidence: float
    ts: str
    conversation_id: str | None
    token_count: int
    profile: EmbeddingProfile
    valid_from: str | None = None  # valid time (domain/memories/validity.py): from (None: ts), to (None: still),
    valid_to: str | None = None  # the memory it replaced and the one that replaced it
    supersedes: str | None = None
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class Turn(Owned):
    """One turn of a conversation."""

    id: str
    conversation_id: str
    role: str
    content: str
    turn_index: int
    ts: str
    token_count: int
    content_hash: str
    profile: EmbeddingProfile


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One vector to index: a record may own several (one per piece of its text). Its id names its
    record first (``<record>::<version>::<piece>``, domain.ids.piece_id): an index answers with ids alone."""

    id: str
    record_id: str
    vector: Vector
    metadata: dict[str, Any] = field(default_factory=dict)
    text_key: str | None = None  # of its text, model and owner (domain.artifacts.reuse): shared, not re-embedded

    def __post_init__(self) -> None:
        if not self.id.startswith(f"{self.record_id}::"):
            raise ValueError(f"vector id {self.id!r} does not name its record {self.record_id!r}")


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """Queued work: bring the vector index's copy of one owner's vectors up to date.

    ``records`` are the vectors the owner has in the store now (read when the item was claimed);
    the owner is a record (memory, turn) or an artifact (for its whole vector and its chunks').
    """

    seq: int
    collection: str
    owner: str
    records: tuple[VectorRecord, ...]
    fresh: bool = False  # its owner is new (a first version): the index holds none of its other vectors


@dataclass(frozen=True, slots=True)
class IngestJob:
    """An artifact version being embedded (or that failed to be): durable, resumable after a crash."""

    artifact_id: str
    version: str
    status: str  # "indexing" or "failed"
    done: int  # indexed chunks (or pieces of an unchunked artifact) stored so far
    total: int
    error: str | None = None
    lease_owner: str | None = None
    lease_until: float = 0.0


@dataclass(frozen=True, slots=True)
class LexicalMatch:
    """A lexical index answer: the record and its relevance (higher is better, backend's own scale)."""

    record_id: str
    score: float


@dataclass(frozen=True, slots=True)
class VectorMatch:
    """A vector index answer: the piece, its owner and its cosine similarity."""

    id: str
    record_id: str
    score: float


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result as a caller sees it."""

    id: str
    type: str
    score: float
    content: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An append-only record of a write or delete: who, what, when, ids; never content."""

    action: str
    collection: str
    item_ids: tuple[str, ...]
    actor: str
    ts: str
    detail: dict[str, Any] = field(default_factory=dict)


ARTIFACT_TYPES = ("email", "doc", "chat", "transcript", "note")
LABEL_KEYS = ("memory_type", "session_id", "session_iter", "iter_order", "agent_id", "task_code", "category",
              "title", "source", "project", "kind", "canonical_key", "doc_class", "pinned", "status", "version_num",
              "codebase", "path", "language")
TAGS = "tags"
TAG_PREFIX = "tag:"  # a tag in index metadata: "tag:<name>": True (indexes filter on scalar fields)


def label_fields(labels: dict[str, Any]) -> dict[str, Any]:
    """An artifact's labels as index metadata fields: scalars as they are, each tag as ``tag:<name>``."""
    fields: dict[str, Any] = {k: v for k, v in labels.items() if k in LABEL_KEYS and v is not None}
    fields.update({f"{TAG_PREFIX}{tag}": True for tag in labels.get(TAGS, ())})
    return fields
SENSITIVITIES = ("normal", "sensitive", "highly_sensitive")
VISIBILITY_SCOPES = ("me", "team", "org", "custom")
RETENTION_POLICIES = ("forever", "1y", "until_resolved", "custom")


@dataclass(frozen=True, slots=True)
class ArtifactChunk:
    """One chunk of an artifact: ``artifact content[start_char:end_char] == content``."""

    id: str
    artifact_id: str
    index: int
    start_char: int
    end_char: int
    content: str
    token_count: int
    content_hash: str
    metadata: dict[str, Any] = field(default_factory=dict)


def artifact_version(digest: str, chunker: str, chunker_version: str, labels: dict[str, Any] | None = None,
                     access: tuple[Any, ...] | None = None) -> str:
    """Names the content, the chunker that cut it, the labels it is filed by and who may see it (its
    vectors carry them): a change of any is a new version. Unlabelled artifacts of the local owner
    keep the name they always had (``access`` None)."""
    if (chunker, chunker_version) == ("token-window", "1") and not labels and access is None:
        return digest[:12]
    filed = f"\x1f{json.dumps(labels, sort_keys=True, ensure_ascii=False)}" if labels else ""
    shared = f"\x1e{json.dumps(list(access), ensure_ascii=False)}" if access is not None else ""
    return hashlib.sha256(f"{digest}\x1f{chunker}\x1f{chunker_version}{filed}{shared}".encode()).hexdigest()[:12]


def access_signature(owner: str, acl: Sequence[str], sensitivity: str, visibility: str,
                     retention: str) -> tuple[Any, ...] | None:
    """What of an artifact's access names its version: None for the local owner's private items (the
    versions stores always had); else all of it (its expiry follows from its retention and time)."""
    if (owner, tuple(acl)) == (LOCAL_USER, (f"u:{LOCAL_USER}",)):
        return None
    return (owner, *sorted(acl), sensitivity, visibility, retention)


@dataclass(frozen=True, slots=True)
class Artifact:
    """A document, email, chat or transcript kept as evidence; chunked when large."""

    id: str
    artifact_type: str
    source_system: str
    source_id: str | None
    source_url: str | None
    title: str | None
    author: str | None
    participants: tuple[str, ...]
    ts: str
    content_hash: str
    token_count: int
    is_chunked: bool
    num_chunks: int
    sensitivity: str
    visibility_scope: str
    retention_policy: str
    ingested_at: str
    chunker: str
    chunker_version: str
    profile: EmbeddingProfile
    content: str | None = None  # the whole text when not chunked; chunks hold it otherwise
    # Where it belongs, for the toolsets that file memories by scope (spec 001's session_id, agent_id...;
    # spec 002's tags and source): LABEL_KEYS to a string, "tags" to a list of strings. Filterable
    # inside both indexes (label_fields gives the vector metadata, the lexical index reads the same).
    labels: dict[str, Any] = field(default_factory=dict)
    owner: str = LOCAL_USER
    acl: tuple[str, ...] = (f"u:{LOCAL_USER}",)
    expires_epoch: float = NEVER
    indexing: bool = False  # a new artifact's first version while its vectors are made: found by words only

    @property
    def version(self) -> str:
        """Vectors of this artifact carry this, so stale or half-written ones are recognisable.

        It names the content and the chunker that cut it: re-chunking the same content is a new
        version. (Token-window 1, the first chunker, keeps the content hash alone, as stores
        written before chunkers were plugins have it.)
        """
        return artifact_version(self.content_hash, self.chunker, self.chunker_version, self.labels, access_signature(
            self.owner, self.acl, self.sensitivity, self.visibility_scope, self.retention_policy))

    def privacy(self) -> dict[str, Any]:
        return {"sensitivity": self.sensitivity, "visibility_scope": self.visibility_scope,
                "retention_policy": self.retention_policy}
