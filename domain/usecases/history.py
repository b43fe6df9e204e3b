"""Conversation history: append (idempotent per turn) and read back the latest turns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.chunking import content_hash
from domain.errors import StorageError
from domain.ids import turn_id
from domain.locking import KeyedLock
from domain.model import ROLES, Chunk, Hit, RequestContext, Turn
from domain.ports import Embedder, MetadataStore, PrivacyPolicy, Tokenizer, VectorIndex
from domain.usecases.common import Clock, apply_policies, audit, embed_pieces, utc_now
from domain.validation import epoch, parse_timestamp, require_choice, require_int, require_text

COLLECTION = "history"
MAX_TURN_INDEX = 2**31 - 1  # a 32-bit INTEGER column in every SQL store
# Appends of the same turn are serialised: read-compare-write must not interleave.
_TURN_LOCKS = KeyedLock()


@dataclass(frozen=True, slots=True)
class AppendTurnRequest:
    conversation_id: str
    role: str
    content: str
    turn_index: int
    ts: str | None = None


@dataclass(frozen=True, slots=True)
class AppendResult:
    turn: Turn
    status: str  # "appended", "replaced" or "unchanged"


@dataclass(frozen=True, slots=True)
class AppendTurn:
    """Same turn, same content: a no-op. Same turn, new content: replaced, old vectors dropped."""

    embedder: Embedder
    vectors: VectorIndex
    store: MetadataStore
    split: Callable[[str], list[Chunk]]
    tokenizer: Tokenizer
    clock: Clock = utc_now

    def __call__(self, request: AppendTurnRequest) -> AppendResult:
        conversation_id = require_text("conversation_id", request.conversation_id, 100)
        role = require_choice("role", request.role, ROLES)
        content = require_text("content", request.content, 50_000)
        index = require_int("turn_index", request.turn_index, 0, MAX_TURN_INDEX)
        ts = parse_timestamp("ts", request.ts) if request.ts is not None else None
        with _TURN_LOCKS.hold(turn_id(conversation_id, index)):
            return self._append(conversation_id, role, content, index, ts)

    def _append(self, conversation_id: str, role: str, content: str, index: int, ts: str | None) -> AppendResult:
        digest = content_hash(content)
        existing = self.store.get_turn(conversation_id, index)
        if existing and existing.content_hash == digest and existing.role == role and ts in (None, existing.ts):
            return AppendResult(existing, "unchanged")
        turn = Turn(
            id=turn_id(conversation_id, index), conversation_id=conversation_id, role=role,
            content=content, turn_index=index, ts=ts or self.clock(),
            token_count=self.tokenizer.count(content), content_hash=digest,
            profile=self.embedder.profile,
        )
        meta = {"conversation_id": conversation_id, "role": role, "turn_index": index, "ts_epoch": epoch(turn.ts)}
        records = embed_pieces(self.embedder, turn.id, digest, self.split(content), meta)
        self.vectors.upsert(COLLECTION, records)
        status = "replaced" if existing else "appended"
        try:
            self.store.put_turn(turn, audit(status, COLLECTION, [turn.id], self.clock(), pieces=len(records)))
        except Exception:
            if not existing:
                self.vectors.delete_records(COLLECTION, [turn.id])
            raise
        current = {record.id for record in records}
        stale = [v for v in self.vectors.vectors_of(COLLECTION, [turn.id]).get(turn.id, []) if v not in current]
        if stale:
            try:
                self.vectors.delete_vectors(COLLECTION, stale)
            except StorageError:
                pass  # stale versions are never returned and are swept at the next start
        return AppendResult(turn, status)


@dataclass(frozen=True, slots=True)
class GetHistory:
    """The last ``limit`` turns of a conversation, oldest first."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]

    def __call__(self, conversation_id: str, limit: int = 16,
                 context: RequestContext | None = None) -> list[Turn]:
        conversation_id = require_text("conversation_id", conversation_id, 100)
        limit = require_int("limit", limit, 1, 50)
        turns = self.store.recent_turns(conversation_id, limit)
        hits = [Hit(id=t.id, type="history", score=0.0, content=t.content,
                    fields={"conversation_id": t.conversation_id, "role": t.role}) for t in turns]
        allowed = {h.id for h in apply_policies(self.policies, hits, context or RequestContext())}
        return [t for t in turns if t.id in allowed]
