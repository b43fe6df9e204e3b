"""Edit a memory in place: its id and time are kept; what is given replaces what was stored."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from domain.access.principal import Identity
from domain.access.privacy import Privacy
from domain.access.rules import NEVER
from domain.chunking import content_hash
from domain.common import Clock, audit, check_change, embed_pieces, utc_now
from domain.errors import NotFoundError, ValidationError
from domain.ids import MEMORY_ID
from domain.memories.usecases import COLLECTION, memory_metadata
from domain.model import MEMORY_TYPES, Memory, RequestContext
from domain.pieces import Piece
from domain.ports import Embedder, MetadataStore, Tokenizer
from domain.validation import epoch, require_choice, require_id, require_text, require_unit_float


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """What to change; None keeps the stored value. ``privacy``: the privacy fields given (spec 000's five,
    by name); those left out keep what the memory has."""

    content: str | None = None
    type: str | None = None
    confidence: float | None = None
    privacy: dict[str, object] | None = None

    def empty(self) -> bool:
        privacy = [v for v in (self.privacy or {}).values() if v is not None]
        return not privacy and all(value is None for value in (self.content, self.type, self.confidence))


@dataclass(frozen=True, slots=True)
class EditMemory:
    """Only its owner may edit a memory (another's: refused, audited; one it may not see: "not found").
    New words are embedded first; the row, its words and vectors are then replaced in one transaction.
    An edit that changes nothing (every field given as stored) writes and audits nothing."""

    embedder: Embedder
    store: MetadataStore
    split: Callable[[str], list[Piece]]
    tokenizer: Tokenizer
    clock: Clock = utc_now
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, memory_id: str, change: MemoryChange) -> Memory:
        return self.edit(memory_id, change)[0]

    def edit(self, memory_id: str, change: MemoryChange) -> tuple[Memory, list[str]]:
        """The memory as it is after the edit, and the fields that changed (content, confidence, privacy,
        type; none: nothing was written)."""
        require_id("memory_id", memory_id, "mem_", MEMORY_ID, "32 hex characters")
        if change.empty():
            raise ValidationError("content", "Nothing to change: give content, type, confidence or privacy fields")
        content = None if change.content is None else require_text("content", change.content, 10_000)
        kind = None if change.type is None else require_choice("type", change.type, MEMORY_TYPES)
        confidence = None if change.confidence is None else require_unit_float("confidence", change.confidence)
        context, stamp, now = self.identity(), self.clock(), self.now()
        found = self.store.get_memories([memory_id]).get(memory_id)
        check_change(self.store, context, found, "edit", COLLECTION, memory_id, "Memory", "memory_id", stamp, now)
        if found is None:
            raise NotFoundError(f"Memory {memory_id} not found")
        privacy = merged_privacy(found, change.privacy or {})
        access = {} if privacy is None else privacy.written(context, epoch(found.ts), now)
        edited = dataclasses.replace(
            found, content=content if content is not None else found.content, type=kind or found.type,
            confidence=confidence if confidence is not None else found.confidence, profile=self.embedder.profile,
            **access)
        edited = dataclasses.replace(edited, token_count=self.tokenizer.count(edited.content))
        # What differs from the stored memory, not what was given: a field given as it is changes nothing.
        changed = sorted(name for name, differs in (
            ("content", edited.content != found.content), ("type", edited.type != found.type),
            ("confidence", edited.confidence != found.confidence),
            ("privacy", any(getattr(edited, key) != getattr(found, key) for key in access))) if differs)
        if not changed:  # given exactly as stored: nothing written, nothing audited
            return found, []
        records = embed_pieces(self.embedder, edited.id, content_hash(edited.content), self.split(edited.content),
                               memory_metadata(edited))
        if not self.store.replace_memory(edited, audit("edit", COLLECTION, [edited.id], stamp, context,
                                                       changed=changed, pieces=len(records)), records):
            raise NotFoundError(f"Memory {memory_id} not found")  # deleted meanwhile: nothing written
        return edited, changed


def merged_privacy(found: Memory, given: dict[str, object]) -> Privacy | None:
    """The privacy fields a caller gave, the rest as stored (a custom audience and a custom retention
    read back from the item's access keys and expiry); None when none was given."""
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return None
    scope = given.get("visibility_scope", found.visibility_scope)
    stored_readers = sorted(f"team:{key[2:]}" if key.startswith("t:") else key[2:] for key in found.acl
                            if key[:2] in ("u:", "t:") and key != f"u:{found.owner}")
    policy = given.get("retention_policy", found.retention_policy)
    stored_days = (round((found.expires_epoch - epoch(found.ts)) / 86_400.0)
                   if found.retention_policy == "custom" and found.expires_epoch < NEVER else None)
    return Privacy(
        sensitivity=given.get("sensitivity", found.sensitivity),  # type: ignore[arg-type]
        visibility_scope=scope,  # type: ignore[arg-type]
        retention_policy=policy,  # type: ignore[arg-type]
        visible_to=given.get("visible_to", stored_readers if scope == "custom" and
                             found.visibility_scope == "custom" else None),  # type: ignore[arg-type]
        retention_days=given.get("retention_days", stored_days if policy == "custom" else None))  # type: ignore[arg-type]
