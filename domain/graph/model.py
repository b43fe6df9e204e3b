"""The knowledge graph's records (the MCP reference memory server's model): entities with their
observations, and relations between entity names. Each caller has a graph of its own (its owner's)."""

from __future__ import annotations

from dataclasses import dataclass


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
