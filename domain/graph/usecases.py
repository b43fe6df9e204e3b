"""The knowledge graph's use cases, as the MCP reference memory server behaves (its tools' names and
results are the graph toolset's): each caller reads and writes a graph of its own. Input is checked
whole first (a bad field names its place, e.g. ``entities[2].name``) and nothing is written then."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from domain.access.principal import Identity
from domain.common import Clock, audit, utc_now
from domain.errors import NotFoundError, ValidationError
from domain.graph.model import Entity, Evidence, Graph, Relation
from domain.graph.found import found_entities
from domain.graph.validity import ended, single_valued
from domain.model import AuditEntry, RequestContext
from domain.ports.graph import DerivedGraph, GraphStore
from domain.search.retrieve import Retriever
from domain.validation import MAX_INT64, require_int

COLLECTION = "graph"
MAX_ITEMS = 1000  # entities, relations or observation items in one call
MAX_NAME = 500  # characters of a name, a type or a relation type
MAX_OBSERVATION = 10_000  # characters of one observation


def _text(where: str, value: object, limit: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(where, f"{where} must be a string")
    if not value.strip() or len(value) > limit:
        raise ValidationError(where, f"{where} must be 1-{limit} characters (got {len(value)})")
    if "\x00" in value:  # PostgreSQL cannot store it, and no name or observation needs it
        raise ValidationError(where, f"{where} must not contain NUL characters")
    return value


def _items(field: str, value: object) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(field, f"{field} must be a list")
    if len(value) > MAX_ITEMS:
        raise ValidationError(field, f"{field} takes at most {MAX_ITEMS} items (got {len(value)})")
    return value


def _object(where: str, value: object, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError(where, f"{where} must be an object with {', '.join(keys)}")
    return value


def _strings(where: str, value: object, limit: int) -> list[str]:
    return [_text(f"{where}[{i}]", v, limit) for i, v in enumerate(_items(where, value))]


def entities_of(value: object) -> list[Entity]:
    found = []
    for i, item in enumerate(_items("entities", value)):
        where = f"entities[{i}]"
        raw = _object(where, item, ("name", "entityType", "observations"))
        found.append(Entity(_text(f"{where}.name", raw.get("name"), MAX_NAME),
                            _text(f"{where}.entityType", raw.get("entityType"), MAX_NAME),
                            tuple(_strings(f"{where}.observations", raw.get("observations", []), MAX_OBSERVATION))))
    return found


def relations_of(value: object) -> list[Relation]:
    found = []
    for i, item in enumerate(_items("relations", value)):
        where = f"relations[{i}]"
        raw = _object(where, item, ("from", "to", "relationType"))
        found.append(Relation(_text(f"{where}.from", raw.get("from"), MAX_NAME),
                              _text(f"{where}.to", raw.get("to"), MAX_NAME),
                              _text(f"{where}.relationType", raw.get("relationType"), MAX_NAME)))
    return found


def observation_items(field: str, value: object, key: str) -> list[tuple[str, list[str]]]:
    found = []
    for i, item in enumerate(_items(field, value)):
        where = f"{field}[{i}]"
        raw = _object(where, item, ("entityName", key))
        found.append((_text(f"{where}.entityName", raw.get("entityName"), MAX_NAME),
                      _strings(f"{where}.{key}", raw.get(key), MAX_OBSERVATION)))
    return found


@dataclass(frozen=True, slots=True)
class Related:
    """An entity reached from the start: how far, by which relations (the path's edges, in order) and
    how many of the level's relations reach it (more: ranked higher)."""

    entity: Entity | None  # None: a name relations give that no entity has
    name: str
    depth: int
    path: tuple[Relation, ...]
    links: int
    evidence: tuple[tuple[Evidence, ...], ...] = ()  # per edge of the path: the records that say it (at most 3)
    ended: tuple[tuple[str, Relation] | None, ...] = ()  # per edge: when it ended and what replaced it, if it did


@dataclass(frozen=True, slots=True)
class KnowledgeGraph:
    store: GraphStore
    derived: DerivedGraph | None = None  # the evidence of facts built from records (get_related shows it)
    retrieve: Retriever | None = None  # search_nodes: the records hybrid retrieval finds name entities too
    clock: Clock = utc_now
    identity: Identity = RequestContext

    def create_entities(self, entities: object) -> list[Entity]:
        given = entities_of(entities)
        context = self.identity()
        return self.store.create_entities(context.actor, given, self._entry("create_entities", context,
                                                                            [e.name for e in given]))

    def create_relations(self, relations: object) -> list[Relation]:
        given = relations_of(relations)
        context = self.identity()
        return self.store.create_relations(context.actor, given, self._entry("create_relations", context,
                                                                             [relation_label(r) for r in given]))

    def add_observations(self, observations: object) -> list[tuple[str, list[str]]]:
        given = observation_items("observations", observations, "contents")
        context = self.identity()
        added = self.store.add_observations(context.actor, given, self._entry("add_observations", context,
                                                                              [n for n, _ in given]))
        if isinstance(added, str):
            raise NotFoundError(f"Entity with name {added} not found")
        return added

    def delete_entities(self, names: object) -> None:
        given = _strings("entityNames", names, MAX_NAME)
        context = self.identity()
        self.store.delete_entities(context.actor, given, self._entry("delete_entities", context, given))

    def delete_observations(self, deletions: object) -> None:
        given = observation_items("deletions", deletions, "observations")
        context = self.identity()
        self.store.delete_observations(context.actor, given, self._entry("delete_observations", context,
                                                                         [n for n, _ in given]))

    def delete_relations(self, relations: object) -> None:
        given = relations_of(relations)
        context = self.identity()
        self.store.delete_relations(context.actor, given, self._entry("delete_relations", context,
                                                                      [relation_label(r) for r in given]))

    def read_graph(self, offset: int = 0, limit: int | None = None) -> tuple[Graph, int | None]:
        """The caller's graph: all of it (``limit`` None, as the reference server), or a page of its
        entities with the relations that start from them (or end at them, from a name no entity has);
        relations between two names no entity has come with the last page. Each relation is on one page.
        The next page's offset, or None."""
        offset = require_int("offset", offset, 0, MAX_INT64)
        limit = None if limit is None else require_int("limit", limit, 1, MAX_ITEMS)
        owner = self.identity().actor
        if limit is None:
            return Graph(tuple(self.store.entities(owner)), tuple(self.store.relations(owner))), None
        page = self.store.entities(owner, after=offset, limit=limit + 1)
        more = len(page) > limit
        entities = page[:limit]
        names = {e.name for e in entities}
        touching = self.store.relations(owner, sorted(names)) if names else []
        outside = sorted({r.source for r in touching if r.source not in names})
        known = {e.name for e in self.store.entities(owner, outside)} if outside else set()
        relations = [r for r in touching if r.source in names or r.source not in known]
        if not more and (entities or offset == 0):  # the last page; past the end there is nothing
            every = {e.name for e in self.store.entities(owner)}
            relations += [r for r in self.store.relations(owner) if r.source not in every and r.target not in every]
        return Graph(tuple(entities), tuple(relations)), offset + len(entities) if more else None

    def search_nodes(self, query: object) -> Graph:
        """The reference's matches first (``query`` in a name, type or observation, any case), then what
        hybrid retrieval finds for ``query`` (by meaning and by words), in its order: the entities the
        graph tools wrote (records of their own, domain/graph/entities.py), and the entities named by
        the records found (a document's chunk: the entities read from that chunk)."""
        text = query if isinstance(query, str) else None
        if text is None or len(text) > MAX_NAME:
            raise ValidationError("query", f"query must be a string of at most {MAX_NAME} characters")
        if "\x00" in text:
            raise ValidationError("query", "query must not contain NUL characters")
        context = self.identity()
        names = self.store.match_entities(context.actor, text)
        if self.retrieve is not None and text.strip():
            names = list(dict.fromkeys([*names, *found_entities(self.retrieve, self.derived, text, context)]))
        return self._nodes(context.actor, names)

    def open_nodes(self, names: object) -> Graph:
        given = _strings("names", names, MAX_NAME)
        return self._nodes(self.identity().actor, given)

    def related(self, name: object, depth: object = 1, relation_types: object = None,
                limit: object = 20, include_ended: object = False) -> list[Related]:
        """The caller's entities within ``depth`` relations of ``name`` (either direction), breadth first:
        nearer first, then those more relations reach, then by name; ``relation_types`` keeps only those."""
        start = _text("entity", name, MAX_NAME)
        hops = require_int("depth", depth, 1, 3)
        count = require_int("limit", limit, 1, 100)
        kinds = None if relation_types is None else set(_strings("relation_types", relation_types, MAX_NAME))
        if not isinstance(include_ended, bool):
            raise ValidationError("include_ended", "include_ended must be true or false")
        owner = self.identity().actor
        if not self.store.entities(owner, [start]):
            raise NotFoundError(f"Entity not found: {start}")
        over: dict[Relation, tuple[str, Relation]] = {}
        reached: dict[str, Related] = {}
        paths: dict[str, tuple[Relation, ...]] = {start: ()}
        frontier = [start]
        for level in range(1, hops + 1):
            links: dict[str, list[Relation]] = {}
            touching = self.store.relations(owner, frontier)
            over |= self._ended(owner, touching)
            for relation in touching:
                if kinds is not None and relation.relation_type not in kinds:
                    continue
                if relation in over and not include_ended:
                    continue  # a value a later record replaced (get_related's include_ended shows it)
                for here, there in ((relation.source, relation.target), (relation.target, relation.source)):
                    if here in frontier and there not in paths:
                        links.setdefault(there, []).append(relation)
            for there, via in links.items():
                first = min(via, key=lambda r: (r.source, r.target, r.relation_type))
                here = first.source if first.target == there else first.target
                paths[there] = (*paths[here], first)
            found = {e.name: e for e in self.store.entities(owner, sorted(links))} if links else {}
            for there, via in links.items():
                reached[there] = Related(found.get(there), there, level, paths[there], len(via))
            frontier = sorted(links)
            if not frontier:
                break
        ranked = sorted(reached.values(), key=lambda r: (r.depth, -r.links, r.name))[:count]
        if self.derived is None or not ranked:
            return ranked
        cited = self.derived.evidence(owner, [edge for r in ranked for edge in r.path])
        return [replace(r, evidence=tuple(tuple(cited.get(edge, [])[:3]) for edge in r.path),
                        ended=tuple(over.get(edge) for edge in r.path)) for r in ranked]

    def _ended(self, owner: str, relations: list[Relation]) -> dict[Relation, tuple[str, Relation]]:
        """Single-valued relations among ``relations`` that a later value of the same subject replaced."""
        single = [r for r in relations if single_valued(r.relation_type)]
        if self.derived is None or not single:
            return {}
        subjects = sorted({r.source for r in single})
        every = [r for r in self.store.relations(owner, subjects)
                 if r.source in subjects and single_valued(r.relation_type)]
        return ended(every, self.derived.evidence(owner, every))

    def unmerge(self, alias: object, entity: object) -> int:
        """Split a merged name out of an entity again (never merged again); the facts moved."""
        name, into = _text("alias", alias, MAX_NAME), _text("entity", entity, MAX_NAME)
        context = self.identity()
        moved = None if self.derived is None else self.derived.unmerge(
            context.actor, name, into, self._entry("unmerge_entity", context, [name, into]))
        if moved is None:
            raise NotFoundError(f"No merge of {name} into {into} in your graph", field="alias")
        return moved

    def _nodes(self, owner: str, names: Sequence[str]) -> Graph:
        entities = self.store.entities(owner, list(dict.fromkeys(names))) if names else []
        found = [e.name for e in entities]
        return Graph(tuple(entities), tuple(self.store.relations(owner, found)) if found else ())

    def _entry(self, action: str, context: RequestContext, names: list[str]) -> AuditEntry:
        """The audit entry of a graph write: its items named (entities and observations by the entity, a
        relation as ``relation_label`` writes it, so a relation is never taken for its source entity)."""
        return audit(action, COLLECTION, names[:50], self.clock(), context, items=len(names))


def relation_label(relation: Relation) -> str:
    """A relation as the audit and the change log name it: ``Dana -[works in]-> Kitchen``."""
    return f"{relation.source} -[{relation.relation_type}]-> {relation.target}"
