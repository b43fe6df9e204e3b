"""What an extractor reads (a passage of a stored record) and what it finds in it: the entities it
names, relations between them and observations about them, each with the sentence it came from.

Extractors are plugins (``memtrove_register_extractors``); ``extraction_problem`` is the check every
result passes before anything of it is written (the contract suite runs it too), so a plugin that
names a relation's end it did not list, or returns a result per passage that is not there, is caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

MAX_EXCERPT = 300  # characters of the sentence kept as an edge's or an observation's evidence
KINDS = ("memory", "turn", "artifact")  # the records a graph is built from
UNKNOWN = "unknown"  # the type of a name whose type the extractor cannot tell (it matches any type)


@dataclass(frozen=True, slots=True)
class Passage:
    """A text to read: a memory, a turn, or one chunk of an artifact (``part``: its index, else -1).
    ``speaker``: who says it (a turn's speaker or role), so that "I" and "my" name them."""

    kind: str
    record_id: str
    text: str
    part: int = -1
    speaker: str | None = None
    when: str | None = None  # ISO time of the record (the fact's valid_from when nothing better is known)


@dataclass(frozen=True, slots=True)
class Mention:
    name: str
    entity_type: str


@dataclass(frozen=True, slots=True)
class FoundRelation:
    source: str  # a mention's name
    relation_type: str
    target: str
    excerpt: str = ""


@dataclass(frozen=True, slots=True)
class FoundObservation:
    name: str  # a mention's name
    text: str


EVENT_KINDS = ("decision", "action", "milestone")


@dataclass(frozen=True, slots=True)
class FoundEvent:
    """A decision, an action (something someone will do) or a milestone (something done) a sentence
    tells: who (mentions' names), the sentence, and the date as written there, if any ("last Friday")."""

    kind: str
    summary: str
    who: tuple[str, ...] = ()
    when_text: str | None = None


@dataclass(frozen=True, slots=True)
class Extracted:
    entities: tuple[Mention, ...] = ()
    relations: tuple[FoundRelation, ...] = ()
    observations: tuple[FoundObservation, ...] = field(default=())
    events: tuple[FoundEvent, ...] = ()


@runtime_checkable
class Extractor(Protocol):
    """Reads passages and says what they name; one result per passage, in order. Raises on failure
    (a build records the error against those records and goes on)."""

    name: str
    version: str

    def extract(self, passages: Sequence[Passage]) -> list[Extracted]: ...


def extraction_problem(passages: Sequence[Passage], found: object) -> str | None:
    """Why ``found`` is not a valid answer for ``passages``, or None."""
    if not isinstance(found, list) or len(found) != len(passages):
        return f"expected a list of {len(passages)} results, got {type(found).__name__}"
    for i, one in enumerate(found):
        if not isinstance(one, Extracted):
            return f"result {i} is a {type(one).__name__}, not Extracted"
        names = set()
        for m in one.entities:
            if not isinstance(m, Mention) or not _text(m.name) or not _text(m.entity_type):
                return f"result {i}: an entity without a name or a type: {m!r}"
            names.add(m.name)
        for r in one.relations:
            if not _text(r.relation_type) or r.source not in names or r.target not in names:
                return f"result {i}: relation {r.source!r} -{r.relation_type}-> {r.target!r} names an unlisted entity"
            if len(r.excerpt) > MAX_EXCERPT:
                return f"result {i}: an excerpt longer than {MAX_EXCERPT} characters"
        for o in one.observations:
            if o.name not in names or not isinstance(o.text, str) or not o.text.strip() or len(o.text) > 2000:
                return f"result {i}: observation of unlisted entity {o.name!r}"
        for e in one.events:
            if e.kind not in EVENT_KINDS or not _text(e.summary) or len(e.summary) > MAX_EXCERPT:
                return f"result {i}: an event needs a kind ({', '.join(EVENT_KINDS)}) and a summary of 1-300 characters"
            if any(w not in names for w in e.who):
                return f"result {i}: event {e.summary[:40]!r} names an unlisted entity"
    return None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 500


def excerpt(sentence: str) -> str:
    """A sentence as evidence: whitespace folded, at most MAX_EXCERPT characters."""
    text = " ".join(sentence.split())
    return text if len(text) <= MAX_EXCERPT else text[:MAX_EXCERPT - 1].rstrip() + "…"
