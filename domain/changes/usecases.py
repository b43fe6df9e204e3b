"""memory_changes: what was added, changed, superseded and deleted between two times, as the caller may
see it (each change carries the item's access fields of its time), optionally for one conversation, one
source (an artifact's source system), one entity of the caller's graph (the records that name it) or
some kinds; paged by the log's sequence numbers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from domain.access.principal import Identity
from domain.access.rules import visible
from domain.changes.model import COLLECTIONS, KINDS, Change
from domain.errors import ValidationError
from domain.model import RequestContext
from domain.paging import decode_cursor, encode_cursor
from domain.ports.changes import ChangeLog
from domain.ports.graph import DerivedGraph
from domain.validation import optional_choices, optional_text, optional_span, require_int

CURSOR = "changes"
BATCH = 500  # log rows read at a time while a page fills
LINKED = 10_000  # records of one entity a filter takes at most





@dataclass(frozen=True, slots=True)
class MemoryChanges:
    log: ChangeLog
    graph: DerivedGraph | None = None
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, since: object, until: object = None, kinds: object = None, collections: object = None,
                 conversation_id: object = None, source: object = None, entity: object = None,
                 cursor: object = None, limit: object = 50) -> tuple[list[Change], str | None]:
        if since is None:
            raise ValidationError("since", "since is required: an ISO-8601 date or time (e.g. 2024-05-01)")
        start, end = optional_span(since, until)
        chosen = optional_choices("kinds", kinds, KINDS)
        where = optional_choices("collections", collections, COLLECTIONS)
        conversation = optional_text("conversation_id", conversation_id, 100)
        origin = optional_text("source", source, 100)
        name = optional_text("entity", entity, 500)
        count = require_int("limit", limit, 1, 500)
        position = decode_cursor(cursor, CURSOR) or [None, None]
        if len(position) != 2 or not (position[0] is None or (isinstance(position[0], (int, float))
                                                               and isinstance(position[1], int))):
            raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
        context, now = self.identity(), self.now()
        items = None
        if name is not None:
            linked = self.graph.linked_records(context.actor, [name], LINKED) if self.graph is not None else []
            items = sorted({origin_id for _, (_, origin_id), _ in linked} | {name})
        found: list[Change] = []
        last = scanned = None if position[0] is None else (float(position[0]), int(position[1]))
        size = count + 1  # enough when the caller may see them all; larger reads when it may not
        while True:
            batch = self.log.changes(start, end, scanned, size, chosen, where, conversation, origin, items)
            for change in batch:
                if not visible({**change.access, "acl": tuple(change.access.get("acl", ()))}, context, now):
                    continue
                if len(found) == count:  # one more the caller may see: a next page
                    return found, encode_cursor(CURSOR, list(last) if last else [None, None])
                found.append(change)
                last = (change.at, change.seq)
            if len(batch) < size:
                return found, None
            scanned, size = (batch[-1].at, batch[-1].seq), BATCH
