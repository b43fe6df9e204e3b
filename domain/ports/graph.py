"""The port of the knowledge graph: entities, observations and relations, per owner, in the store.
Every write carries its audit entry; orders are the order things were created (the reference server's
file order)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from domain.graph.model import Alias, Derived, Entity, Event, Evidence, GraphBuild, Relation
from domain.model import AuditEntry, VectorRecord


@runtime_checkable
class GraphStore(Protocol):
    def create_entities(self, owner: str, entities: Sequence[Entity], entry: AuditEntry,
                        vectors: Sequence[VectorRecord] = ()) -> list[Entity]:
        """Those whose name the owner's graph does not hold yet (the first of a name given twice), with
        their observations; the others are left as they are. Returns the ones created, in order. Each
        one created is a searchable record (domain/graph/entities.py): its words indexed, and those of
        ``vectors`` that are its own stored and queued for the vector index, in the same transaction."""
        ...

    def create_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> list[Relation]:
        """Those not held yet (same source, target and type), whether or not their entities exist."""
        ...

    def add_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]],
                         entry: AuditEntry, vectors: Sequence[VectorRecord] = ()) -> list[tuple[str, list[str]]] | str:
        """Each entity's new observations (those it does not hold yet, in order), all or nothing: the
        name of the first entity that does not exist (nothing written), else what each item added.
        Each entity given is a searchable record then (its words indexed again); of ``vectors``, those
        of its name and of the observations added are stored and queued."""
        ...

    def delete_entities(self, owner: str, names: Sequence[str], entry: AuditEntry) -> None:
        """The entities and their observations, and every relation from or to one of the names; their
        records (words and vectors) with them."""
        ...

    def delete_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry) -> None:
        """Those observations of those entities (an unknown entity or observation: nothing), and their
        vectors; the entity's words indexed again."""
        ...

    def delete_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> None: ...

    def entities(self, owner: str, names: Sequence[str] | None = None, after: int = 0,
                 limit: int | None = None) -> list[Entity]:
        """The owner's entities in creation order (``names``: only those; ``after``/``limit``: a page by
        position, 0-based)."""
        ...

    def relations(self, owner: str, touching: Sequence[str] | None = None) -> list[Relation]:
        """The owner's relations in creation order; ``touching``: only those from or to one of the names."""
        ...

    def match_entities(self, owner: str, text: str) -> list[str]:
        """Names of the entities whose name, type or an observation holds ``text`` (any case), in order."""
        ...

    def entity_records(self, record_ids: Sequence[str]) -> dict[str, tuple[str, Entity]]:
        """The searchable entity records of those ids that exist: (owner, the entity as it is now)."""
        ...


Origin = tuple[str, str]  # (record kind, record id): a record a graph was built from


@runtime_checkable
class DerivedGraph(Protocol):
    """The part of the graph built from stored records: each fact keeps its evidence (the records it was
    read from). A fact made by a graph tool has none and is the caller's; one built from records goes
    when its last evidence goes (its record deleted, changed or no longer readable), unless a graph tool
    wrote it too. Every write carries its audit entry."""

    def source_digests(self, owner: str, origins: Sequence[Origin] | None = None) -> dict[Origin, str]:
        """The records the owner's graph was built from, with the digest of what was read (``origins``:
        only those of them)."""
        ...

    def apply_sources(self, owner: str, items: Sequence[tuple[Origin, str, Derived]], entry: AuditEntry) -> None:
        """For each record, all at once: what it said before is forgotten, then ``Derived`` is written
        (entities created when missing; relations and observations added when missing; evidence kept)
        and the digest recorded."""
        ...

    def forget_sources(self, owner: str | None, origins: Sequence[Origin], entry: AuditEntry | None) -> int:
        """What those records said (any owner's graph when ``owner`` is None): their evidence, and each
        fact left with none. The number of records that had been read."""
        ...

    def evidence(self, owner: str, relations: Sequence[Relation]) -> dict[Relation, list[Evidence]]: ...

    def linked_records(self, owner: str, names: Sequence[str], limit: int) -> list[tuple[str, Origin, int]]:
        """Records that name those entities (entity name, origin, chunk part), the most recent first."""
        ...

    def named_by(self, owner: str, origins: Sequence[Origin],
                 parts: Mapping[Origin, set[int]] | None = None) -> dict[Origin, list[str]]:
        """The entities each of those records names (as read), in the order they were read; ``parts``:
        of a record it holds, only those read from these parts (a document's chunks by index)."""
        ...

    def events(self, owner: str, since: float | None = None, until: float | None = None,
               kinds: Sequence[str] | None = None, who: str | None = None, origins: Sequence[Origin] | None = None,
               conversation_id: str | None = None, limit: int = 100, after: tuple[float, int] | None = None
               ) -> list[tuple[int, float, Event]]:
        """The owner's events in date order (undated last), each with its id and date (epoch; inf when
        none): a time range, kinds, one entity among who, some records or one conversation's turns narrow
        them; ``after``: those after (date, id)."""
        ...

    def aliases(self, owner: str) -> list[Alias]: ...

    def unmerge(self, owner: str, alias: str, name: str, entry: AuditEntry) -> int | None:
        """Split ``alias`` out of entity ``name`` again: the facts read under that name move to a new
        entity of that name (same type) and the pair is never merged again. None: no such merge; else
        the number of facts moved."""
        ...

    def save_build(self, build: GraphBuild) -> None: ...

    def builds(self, owner: str, build_id: str | None = None, limit: int = 1) -> list[GraphBuild]:
        """The owner's builds, newest first (``build_id``: only that one)."""
        ...
