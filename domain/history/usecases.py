"""Conversation history: append (idempotent per turn) and read back the latest turns.

A conversation id is its owner's own, as a file name is in one's own folder: the caller's
``history_append`` always writes to its own conversation of that id, whoever else uses the same id, so an
id another caller has taken answers exactly as an unused one and leaves the other's conversation as it
was. ``history_get`` reads the caller's own conversation, or with ``owner`` another's, of which it sees
the turns shared with it (none, as for an id nobody used, otherwise).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.chunking import content_hash
from domain.access.principal import Identity, check_name
from domain.access.privacy import Privacy, audience
from domain.access.rules import access_fields, access_metadata, visible
from domain.errors import MemtroveError, ValidationError
from domain.ids import turn_id
from domain.paging import Page, decode_cursor, encode_cursor
from domain.model import ROLES, Hit, RequestContext, Turn
from domain.pieces import Piece
from domain.ports import Embedder, KeyLocks, MetadataStore, PrivacyPolicy, Tokenizer
from domain.common import Clock, apply_policies, audit, embed_pieces, utc_now
from domain.validation import epoch, parse_timestamp, require_choice, require_int, require_text

COLLECTION = "history"
# Each turn is also embedded as read after the turn before it ("Alice: Where did you go?\nBob: The
# lake!"): the vectors of the contextual signal, in their own collection, same ids and metadata.
CONTEXT_COLLECTION = "history_context"
MAX_TURN_INDEX = 2**31 - 1  # a 32-bit INTEGER column in every SQL store


@dataclass(frozen=True, slots=True)
class AppendTurnRequest:
    conversation_id: str
    role: str
    content: str
    turn_index: int
    ts: str | None = None
    privacy: Privacy = Privacy()


@dataclass(frozen=True, slots=True)
class AppendResult:
    turn: Turn
    status: str  # "appended", "replaced" or "unchanged"


@dataclass(frozen=True, slots=True)
class AppendTurn:
    """Same turn, same content: a no-op. Same turn, new content: replaced with its vectors.

    Appends to one conversation are serialised by a lock every process shares (read-compare-write).
    """

    embedder: Embedder
    store: MetadataStore
    locks: KeyLocks
    split: Callable[[str], list[Piece]]
    tokenizer: Tokenizer
    clock: Clock = utc_now
    identity: Identity = RequestContext  # who is calling (fed by the transport; the local owner by default)

    def __call__(self, request: AppendTurnRequest) -> AppendResult:
        conversation_id = require_text("conversation_id", request.conversation_id, 100)
        role = require_choice("role", request.role, ROLES)
        content = require_text("content", request.content, 50_000)
        index = require_int("turn_index", request.turn_index, 0, MAX_TURN_INDEX)
        ts = parse_timestamp("ts", request.ts) if request.ts is not None else None
        request.privacy.checked()
        context = self.identity()
        # A conversation's turns are compared and written (this one, and the next one read again after
        # it) under one lock of its owner's conversation; the sweep deletes turns under it too.
        with self.locks.hold(conversation_lock(context.principal.user_id, conversation_id)):
            return self._append(context, conversation_id, role, content, index, ts, request.privacy)

    def _append(self, context: RequestContext, conversation_id: str, role: str, content: str, index: int,
                ts: str | None, privacy: Privacy) -> AppendResult:
        owner = context.principal.user_id
        digest = content_hash(content)
        existing = self.store.get_turn(owner, conversation_id, index)
        stamp = ts or self.clock()
        now = epoch(self.clock())
        if existing and existing.content_hash == digest and existing.role == role and ts in (None, existing.ts) \
                and existing.expires_epoch > now and _same_access(existing, privacy.fields(context, epoch(existing.ts))):
            return AppendResult(existing, "unchanged")
        turn = Turn(  # a turn stored under an earlier id scheme keeps its id
            id=existing.id if existing else turn_id(conversation_id, index, owner), conversation_id=conversation_id,
            role=role,
            content=content, turn_index=index, ts=stamp,
            token_count=self.tokenizer.count(content), content_hash=digest,
            profile=self.embedder.profile, **privacy.written(context, epoch(stamp), now),
        )
        meta = turn_metadata(turn)
        pieces = self.split(content)
        before = self.store.get_turn(owner, conversation_id, index - 1) if index > 0 else None
        read = read_after(before, turn)
        in_context = self.split(read) if read != content else []
        records = embed_pieces(self.embedder, turn.id, digest, [*pieces, *in_context], meta)
        plain, contextual = records[:len(pieces)], records[len(pieces):] or records[:len(pieces)]
        status = "replaced" if existing else "appended"
        self.store.put_turn(turn, audit(status, COLLECTION, [turn.id], self.clock(), context, pieces=len(plain)),
                            {COLLECTION: plain, CONTEXT_COLLECTION: contextual})
        if index < MAX_TURN_INDEX:
            self._recontext(self.store.get_turn(owner, conversation_id, index + 1), turn)
        return AppendResult(turn, status)

    def _recontext(self, after: Turn | None, turn: Turn) -> None:
        """The next turn, stored before this one (or read after its old content), read after it now.

        After the commit: a failure leaves that turn's contextual vector as it was, a hint only.
        """
        if after is None:
            return
        try:
            records = embed_pieces(self.embedder, after.id, after.content_hash, self.split(read_after(turn, after)),
                                   turn_metadata(after))
            self.store.replace_vectors(CONTEXT_COLLECTION, after.id, records)
        except MemtroveError:
            return


def _same_access(turn: Turn, fields: dict[str, object]) -> bool:
    return all(getattr(turn, name) == value for name, value in fields.items())


def conversation_lock(owner: str, conversation_id: str) -> str:
    """The lock key of an owner's conversation's writes (appends, and the sweep's deletes)."""
    return f"conversation:{owner}\x1f{conversation_id}"


def turn_metadata(turn: Turn) -> dict[str, object]:
    """What a turn's vectors carry for filtering (both collections)."""
    return {"conversation_id": turn.conversation_id, "role": turn.role, "turn_index": turn.turn_index,
            "ts_epoch": epoch(turn.ts), **access_metadata(turn)}


def read_after(before: Turn | None, turn: Turn) -> str:
    """A turn's text as read after the turn before it; alone when there is none, or when its readers are
    not the same (a turn's context holds only turns its readers may read too)."""
    if before is None or audience(before) != audience(turn):
        return turn.content
    return f"{before.content}\n{turn.content}"


@dataclass(frozen=True, slots=True)
class GetHistory:
    """The last ``limit`` turns of a conversation, oldest first; ``cursor`` pages back to older ones. The
    caller's own conversation of that id, or ``owner``'s (only the turns it shares with the caller)."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, conversation_id: str, limit: int = 16, cursor: object = None,
                 context: RequestContext | None = None, owner: object = None) -> Page[Turn]:
        conversation_id = require_text("conversation_id", conversation_id, 100)
        limit = require_int("limit", limit, 1, 50)
        context = context or self.identity()
        whose = context.principal.user_id if owner is None else check_name("owner", owner)
        kind = f"history:{conversation_id}" if whose == context.principal.user_id else \
            f"history:{whose}\x1f{conversation_id}"
        position = decode_cursor(cursor, kind)
        if position is not None and (len(position) != 1 or not isinstance(position[0], int)):
            raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
        now = self.now()
        before = position[0] if position else None
        found: list[Turn] = []
        while len(found) <= limit:  # what the caller may see of the conversation, however much else it holds
            batch = self.store.recent_turns(whose, conversation_id, limit + 1, before)
            found = [t for t in batch if visible(access_fields(t), context, now)] + found
            if len(batch) <= limit:
                break
            before = batch[0].turn_index
        turns = found[-limit:]
        next_cursor = encode_cursor(kind, [turns[0].turn_index]) if len(found) > limit else None
        hits = [Hit(id=t.id, type="history", score=0.0, content=t.content,
                    fields={"conversation_id": t.conversation_id, "role": t.role}) for t in turns]
        allowed = {h.id for h in apply_policies(self.policies, hits, context)}
        return Page([t for t in turns if t.id in allowed], next_cursor)
