"""Memory use cases: store, search, list and delete durable memories."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from domain.chunking import content_hash
from domain.access.principal import Identity
from domain.access.privacy import Privacy
from domain.access.rules import access_fields, access_metadata, visible
from domain.errors import NotFoundError, ValidationError
from domain.ids import MEMORY_ID, new_memory_id
from domain.paging import Page, decode_cursor, encode_cursor
from domain.model import MEMORY_TYPES, EmbeddingProfile, Hit, Memory, RequestContext
from domain.memories.validity import interval, interval_metadata, validity
from domain.pieces import Piece
from domain.ports import Embedder, MetadataStore, PrivacyPolicy, Tokenizer
from domain.common import Clock, apply_policies, audit, check_change, denied, embed_pieces, utc_now
from domain.validation import epoch, optional_text, optional_time, require_id, require_choice, require_int, require_text, require_unit_float

COLLECTION = "memory"


@dataclass(frozen=True, slots=True)
class StoreMemoryRequest:
    content: str
    type: str
    confidence: float
    conversation_id: str | None = None
    privacy: Privacy = Privacy()
    supersedes: str | None = None  # the memory this one replaces (ended, kept: its history stays readable)
    valid_from: str | None = None  # from when it holds (default: when stored)


def memory_metadata(memory: Memory) -> dict[str, object]:
    """What a memory's vectors carry for filters inside the vector index."""
    return {"type": memory.type, "confidence": memory.confidence, "conversation_id": memory.conversation_id or "",
            "ts_epoch": epoch(memory.ts), **interval_metadata(memory), **access_metadata(memory)}


@dataclass(frozen=True, slots=True)
class StoreMemory:
    """Embed first, then commit the row with its vectors in one transaction (the index follows)."""

    embedder: Embedder
    store: MetadataStore
    split: Callable[[str], list[Piece]]
    tokenizer: Tokenizer
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)

    def __call__(self, request: StoreMemoryRequest) -> Memory:
        ts = self.clock()
        return self.write(request, new_memory_id(), ts, now=ts)

    def write(self, request: StoreMemoryRequest, memory_id: str, ts: str, check_only: bool = False,
              now: str | None = None, kept: dict[str, str] | None = None) -> Memory:
        """Store the memory as ``memory_id`` at ``ts`` (an import keeps both; ``now``: the clock's, read
        once); with ``check_only`` every field is checked and nothing is embedded or written. ``kept``: an
        imported memory's valid time as it was exported (its versions are imported each as they were)."""
        stamp = now or self.clock()
        content = require_text("content", request.content, 10_000)
        kind = require_choice("type", request.type, MEMORY_TYPES)
        confidence = require_unit_float("confidence", request.confidence)
        conversation_id = optional_text("conversation_id", request.conversation_id, 100)
        context = self.identity()
        access = request.privacy.written(context, epoch(ts), epoch(stamp))
        valid_from = request.valid_from if optional_time("valid_from", request.valid_from) is not None else None
        replaced = self._superseded(request.supersedes, context, stamp)
        supersedes = replaced.id if replaced is not None else None
        memory = Memory(
            id=memory_id, content=content, type=kind, confidence=confidence,
            ts=ts, conversation_id=conversation_id,
            token_count=self.tokenizer.count(content),
            profile=self.embedder.profile, valid_from=valid_from, supersedes=supersedes, **access,
        )
        if kept:
            memory = replace(memory, **_kept(kept))
        if replaced is not None:
            _after(memory, replaced)
        if check_only:
            return memory
        pieces = self.split(content)
        records = embed_pieces(self.embedder, memory.id, content_hash(content), pieces, memory_metadata(memory))
        entry = audit("store", COLLECTION, [memory.id, *([supersedes] if supersedes else [])], stamp, context,
                      pieces=len(records), **({"supersedes": supersedes} if supersedes else {}))
        if supersedes is None or kept:
            self.store.add_memory(memory, entry, records)
            return memory
        refused = self.store.supersede_memory(memory, entry, records)
        if refused == "missing":
            raise NotFoundError(f"Memory {supersedes} not found", field="supersedes")
        if refused == "superseded":
            raise ValidationError("supersedes", f"Memory {supersedes} is already superseded: supersede the memory "
                                                "that replaced it (memory_history lists them)")
        return memory

    def _superseded(self, memory_id: str | None, context: RequestContext, stamp: str) -> Memory | None:
        """The memory a new one replaces, checked: it exists, the caller may change it, it has no successor."""
        if memory_id is None:
            return None
        require_id("supersedes", memory_id, "mem_", MEMORY_ID, "32 hex characters")
        found = self.store.get_memories([memory_id]).get(memory_id)
        check_change(self.store, context, found, "supersede", COLLECTION, memory_id, "Memory", "supersedes",
                     stamp, epoch(stamp))
        if found is None:
            raise NotFoundError(f"Memory {memory_id} not found", field="supersedes")
        if found.superseded_by is not None:
            raise ValidationError("supersedes", f"Memory {memory_id} is already superseded by {found.superseded_by}: "
                                                "supersede that one")
        return found


def _after(memory: Memory, replaced: Memory) -> None:
    """A new version begins no earlier than the one it replaces: that one ends where this one begins, and
    an end before its start would leave it an interval that is not one (and two versions holding at once)."""
    begins, old_begins = memory.valid_from or memory.ts, replaced.valid_from or replaced.ts
    if interval(memory)[0] < interval(replaced)[0]:
        said = "valid_from" if memory.valid_from else "valid_from (not given: when it is stored)"
        raise ValidationError("valid_from", f"{said} {begins} is before {old_begins}, when memory {replaced.id} that "
                                            "it supersedes begins to hold: a version cannot end before it begins. "
                                            f"Give valid_from at or after {old_begins}")


def _kept(kept: dict[str, str]) -> dict[str, str]:
    """An imported memory's valid time, checked: times for valid_from/valid_to, memory ids for the links (an
    import's links as a whole: domain/transfer/links.py)."""
    for name, value in kept.items():
        if name in ("valid_from", "valid_to"):
            optional_time(name, value)
        else:
            require_id(name, value, "mem_", MEMORY_ID, "32 hex characters")
    return dict(kept)


@dataclass(frozen=True, slots=True)
class ListMemories:
    """The newest memories, optionally of one type, privacy-filtered; page after page with ``cursor``."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, type: str | None = None, limit: int = 20, cursor: object = None,
                 context: RequestContext | None = None) -> Page[Hit]:
        kind = None if type is None else require_choice("type", type, MEMORY_TYPES)
        limit = require_int("limit", limit, 1, 100)
        position = decode_cursor(cursor, f"memories:{kind or ''}")
        before = None
        if position is not None:
            if len(position) != 2 or not all(isinstance(p, str) for p in position):
                raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
            before = (position[0], position[1])
        context = context or self.identity()
        now = self.now()
        found: list[Memory] = []
        while len(found) <= limit:  # pages of what the caller may see, however much else is stored
            batch = self.store.list_memories(kind, limit + 1, before)
            found += [m for m in batch if visible(access_fields(m), context, now)]
            if len(batch) <= limit:
                break
            before = (batch[-1].ts, batch[-1].id)
        last = found[limit - 1] if len(found) > limit else None
        hits = [memory_hit(m, None) for m in found[:limit]]
        next_cursor = encode_cursor(f"memories:{kind or ''}", [last.ts, last.id]) if last else None
        return Page(apply_policies(self.policies, hits, context), next_cursor)


@dataclass(frozen=True, slots=True)
class GetMemory:
    """One memory, whole, by id; "not found" for one the caller may not see (audited), as for none."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time
    clock: Clock = utc_now

    def __call__(self, memory_id: object) -> Hit:
        require_id("memory_id", memory_id, "mem_", MEMORY_ID, "32 hex characters")
        context = self.identity()
        found = self.store.get_memories([str(memory_id)]).get(str(memory_id))
        if found is not None and not visible(access_fields(found), context, self.now()):
            denied(self.store, context, "get", COLLECTION, str(memory_id), "not visible to the caller", self.clock())
            found = None
        shown = apply_policies(self.policies, [memory_hit(found, None)], context) if found else []
        if not shown:
            raise NotFoundError(f"Memory {memory_id} not found")
        return shown[0]


@dataclass(frozen=True, slots=True)
class DeleteMemory:
    """Delete the row and its vectors in one transaction (the index follows)."""

    store: MetadataStore
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)
    now: Callable[[], float] = time.time

    def __call__(self, memory_id: str) -> str:
        require_id("memory_id", memory_id, "mem_", MEMORY_ID, "32 hex characters")
        context = self.identity()
        found = self.store.get_memories([memory_id]).get(memory_id)
        check_change(self.store, context, found, "delete", COLLECTION, memory_id, "Memory", "memory_id",
                     self.clock(), self.now())
        entry = audit("delete", COLLECTION, [memory_id], self.clock(), context)
        if not self.store.delete_memory(memory_id, entry):
            raise NotFoundError(f"Memory {memory_id} not found")
        return memory_id


def memory_hit(memory: Memory, score: float | None, profile: EmbeddingProfile | None = None) -> Hit:
    """``profile``: of the vectors that found it, when it was found by search."""
    return Hit(
        id=memory.id, type="memory", score=round(score, 6) if score is not None else 0.0,
        content=memory.content,
        fields={
            "memory_type": memory.type, "confidence": memory.confidence, "ts": memory.ts,
            "conversation_id": memory.conversation_id, "token_count": memory.token_count,
            **(profile or memory.profile).as_metadata(), **validity(memory),
        },
    )


@dataclass(frozen=True, slots=True)
class MemoryHistory:
    """A memory's versions, oldest first: those it superseded and those that superseded it, as the caller
    may see them (one it may not see ends the walk that way)."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, memory_id: object) -> list[Hit]:
        require_id("memory_id", memory_id, "mem_", MEMORY_ID, "32 hex characters")
        context, now = self.identity(), self.now()
        start = self._seen(str(memory_id), context, now)
        if start is None:
            raise NotFoundError(f"Memory {memory_id} not found")
        chain = [start]
        for step in ("supersedes", "superseded_by"):
            at = start
            # A repeat ends the walk: links that loop back (a store written before imports checked them)
            # would otherwise list the same versions over and over.
            while (next_id := getattr(at, step)) and len(chain) < MAX_HISTORY \
                    and all(m.id != next_id for m in chain):
                found = self._seen(next_id, context, now)
                if found is None:
                    break
                chain = [found, *chain] if step == "supersedes" else [*chain, found]
                at = found
        hits = [memory_hit(m, None) for m in chain]
        kept = {h.id for h in apply_policies(self.policies, hits, context)}
        return [h for h in hits if h.id in kept]

    def _seen(self, memory_id: str, context: RequestContext, now: float) -> Memory | None:
        found = self.store.get_memories([memory_id]).get(memory_id)
        return found if found is not None and visible(access_fields(found), context, now) else None


MAX_HISTORY = 1000  # versions a history reads at most
