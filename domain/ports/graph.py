"""The port of the knowledge graph: entities, observations and relations, per owner, in the store.
Every write carries its audit entry; orders are the order things were created (the reference server's
file order)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from domain.graph.model import Entity, Relation
from domain.model import AuditEntry


@runtime_checkable
class GraphStore(Protocol):
    def create_entities(self, owner: str, entities: Sequence[Entity], entry: AuditEntry) -> list[Entity]:
        """Those whose name the owner's graph does not hold yet (the first of a name given twice), with
        their observations; the others are left as they are. Returns the ones created, in order."""
        ...

    def create_relations(self, owner: str, relations: Sequence[Relation], entry: AuditEntry) -> list[Relation]:
        """Those not held yet (same source, target and type), whether or not their entities exist."""
        ...

    def add_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]],
                         entry: AuditEntry) -> list[tuple[str, list[str]]] | str:
        """Each entity's new observations (those it does not hold yet, in order), all or nothing: the
        name of the first entity that does not exist (nothing written), else what each item added."""
        ...

    def delete_entities(self, owner: str, names: Sequence[str], entry: AuditEntry) -> None:
        """The entities and their observations, and every relation from or to one of the names."""
        ...

    def delete_observations(self, owner: str, items: Sequence[tuple[str, Sequence[str]]], entry: AuditEntry) -> None:
        """Those observations of those entities (an unknown entity or observation: nothing)."""
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
