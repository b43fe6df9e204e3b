"""event_search and timeline (spec 000 §13.3): the decisions, actions and milestones build_graph read
from the caller's records. A search finds the records hybrid retrieval ranks for the query and answers
their events in that order (by meaning and by words, through the one retrieval engine), within a time
range and kinds; a timeline lists events in date order for one conversation, one entity or all."""

from __future__ import annotations

from dataclasses import dataclass

from domain.access.principal import Identity
from domain.errors import ValidationError
from domain.graph.extraction import EVENT_KINDS
from domain.graph.model import Event
from domain.graph.records import found_records
from domain.model import RequestContext
from domain.paging import decode_cursor, encode_cursor
from domain.ports.graph import DerivedGraph
from domain.search.retrieve import Retriever
from domain.validation import optional_choices, optional_text, optional_span, require_int, require_text

CURSOR = "timeline"
RECORDS = 30  # records event_search asks hybrid retrieval for





@dataclass(frozen=True, slots=True)
class EventSearch:
    derived: DerivedGraph
    retrieve: Retriever
    identity: Identity = RequestContext

    def __call__(self, query: object, since: object = None, until: object = None, kinds: object = None,
                 limit: object = 10) -> list[Event]:
        text = require_text("query", query, 500, label="Query")
        (start, end), chosen = optional_span(since, until), optional_choices("kinds", kinds, EVENT_KINDS)
        count = require_int("limit", limit, 1, 50)
        context = self.identity()
        origins = found_records(self.retrieve, text, RECORDS, context)
        found = self.derived.events(context.actor, start, end, chosen, origins=origins, limit=count * 5)
        rank = {origin: n for n, origin in enumerate(origins)}
        ordered = sorted(found, key=lambda e: (rank[(e[2].evidence.kind, e[2].evidence.record_id)], e[1], e[0]))
        return [e for _, _, e in ordered][:count]


@dataclass(frozen=True, slots=True)
class Timeline:
    derived: DerivedGraph
    identity: Identity = RequestContext

    def __call__(self, conversation_id: object = None, entity: object = None, since: object = None,
                 until: object = None, kinds: object = None, cursor: object = None,
                 limit: object = 50) -> tuple[list[Event], str | None]:
        conversation = optional_text("conversation_id", conversation_id, 100)
        who = optional_text("entity", entity, 500)
        (start, end), chosen = optional_span(since, until), optional_choices("kinds", kinds, EVENT_KINDS)
        count = require_int("limit", limit, 1, 200)
        position = decode_cursor(cursor, CURSOR)
        if position is not None and (len(position) != 2 or not isinstance(position[1], int)):
            raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
        after = (float(position[0]), int(position[1])) if position else None
        found = self.derived.events(self.identity().actor, start, end, chosen, who, None, conversation, count + 1,
                                    after)
        more = len(found) > count
        page = found[:count]
        return [e for _, _, e in page], encode_cursor(CURSOR, [page[-1][1], page[-1][0]]) if more else None
