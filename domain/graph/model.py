"""The knowledge graph's records (the MCP reference memory server's model): entities with their
observations, and relations between entity names. Each caller has a graph of its own (its owner's)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    entity_type: str
    observations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Relation:
    source: str  # the reference server's ``from``
    target: str  # its ``to``
    relation_type: str


@dataclass(frozen=True, slots=True)
class Graph:
    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a fact was read: a record (``kind``: memory, turn or artifact; ``part``: the chunk, else -1),
    the name it was called there (before resolution merged it), the sentence, and the record's time."""

    kind: str
    record_id: str
    part: int = -1
    mention: str = ""
    excerpt: str = ""
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Derived:
    """What one record says, names resolved: written in place of what the record said before."""

    entities: tuple[Entity, ...] = ()  # observations left empty: they come as ``observations``
    relations: tuple[tuple[Relation, Evidence, str], ...] = ()  # (relation, evidence of its source, target mention)
    observations: tuple[tuple[str, str, Evidence], ...] = ()  # (entity name, text, evidence)
    mentions: tuple[tuple[str, Evidence], ...] = ()  # (entity name, evidence): each entity the record names
    aliases: tuple["Alias", ...] = ()  # names resolution merged into an entity while reading the record
    events: tuple["Event", ...] = ()  # decisions, actions and milestones the record tells


@dataclass(frozen=True, slots=True)
class Alias:
    """A name merged into an entity (how, how sure); ``blocked``: unmerged, never merged again."""

    alias: str
    name: str
    method: str
    score: float
    blocked: bool = False


@dataclass(frozen=True, slots=True)
class GraphBuild:
    """A build_graph run: its state (running, done, failed; interrupted when its worker stopped
    reporting) and counts; ``errors``: the records it could not read, with why."""

    id: str
    owner: str
    state: str
    started: str
    updated: str
    filters: dict = field(default_factory=dict)
    total: int = 0
    done: int = 0
    skipped: int = 0
    forgotten: int = 0
    entities: int = 0
    relations: int = 0
    observations: int = 0
    errors: tuple[str, ...] = ()
    finished: str | None = None
    holder: str = ""  # the process running it (domain/ports/processes.py); "" for builds from before


NO_DATE = 1e18  # an undated event's place in time order: last


@dataclass(frozen=True, slots=True)
class Event:
    """A decision, an action or a milestone a record tells (spec 000 §13.3's event summaries): who (entity
    names), the sentence as its one-line summary, when (``date``: the date written in the sentence
    resolved against the record's time, else the record's time: ``dated_by`` says which) and where it was
    read (``evidence``: the record, its chunk, the sentence)."""

    kind: str
    summary: str
    who: tuple[str, ...]
    date: str | None
    dated_by: str  # "text" (a date the sentence gives), "record" (the record's time) or "none"
    evidence: Evidence
    date_text: str | None = None
