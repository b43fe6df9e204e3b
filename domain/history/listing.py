"""The conversations a caller may see, page by page: each with its owner (a conversation id is each
owner's own), how many of its turns the caller sees, its first and last time and its last turn (what
the page and the command line list)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.access.principal import Identity
from domain.access.rules import access_fields, visible
from domain.common import apply_policies
from domain.errors import ValidationError
from domain.history.usecases import MAX_TURN_INDEX
from domain.model import Hit, RequestContext, Turn
from domain.paging import Page, decode_cursor, encode_cursor
from domain.ports import MetadataStore, PrivacyPolicy
from domain.validation import require_int

CURSOR = "conversations"
BATCH = 500  # turns read at a time


@dataclass(frozen=True, slots=True)
class Conversation:
    conversation_id: str
    owner: str
    turns: int  # those the caller may see
    first_ts: str
    last_ts: str
    last: Turn


@dataclass(frozen=True, slots=True)
class ListConversations:
    """By conversation id, then owner; a conversation none of whose turns the caller may see is not listed."""

    store: MetadataStore
    policies: Sequence[PrivacyPolicy]
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, limit: object = 25, cursor: object = None) -> Page[Conversation]:
        count = require_int("limit", limit, 1, 100)
        position = decode_cursor(cursor, CURSOR)
        if position is not None and (len(position) != 2 or not all(isinstance(p, str) for p in position)):
            raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
        after = (position[0], position[1], MAX_TURN_INDEX) if position else None
        context, now = self.identity(), self.now()
        found: dict[tuple[str, str], list[Turn]] = {}
        done = False
        while len(found) <= count and not done:
            batch = self.store.turns_in_order(after, BATCH)
            done = len(batch) < BATCH
            for turn in batch:
                if visible(access_fields(turn), context, now):
                    found.setdefault((turn.conversation_id, turn.owner), []).append(turn)
            if batch:
                after = (batch[-1].conversation_id, batch[-1].owner, batch[-1].turn_index)
        # Turns come by conversation: once a later one shows (or none is left), the first are whole.
        ids = sorted(found)
        listed = ids[:count]
        allowed = self._allowed([found[c][-1] for c in listed], context)
        page = [Conversation(c[0], c[1], len(found[c]), min(t.ts for t in found[c]), max(t.ts for t in found[c]),
                             found[c][-1]) for c in listed if found[c][-1].id in allowed]
        next_cursor = encode_cursor(CURSOR, list(listed[-1])) if len(ids) > count else None
        return Page(page, next_cursor)

    def _allowed(self, turns: list[Turn], context: RequestContext) -> set[str]:
        hits = [Hit(id=t.id, type="history", score=0.0, content=t.content,
                    fields={"conversation_id": t.conversation_id, "role": t.role}) for t in turns]
        return {h.id for h in apply_policies(self.policies, hits, context)}
