"""get_related's traversal (KnowledgeGraph.related) on the fake store: breadth first either way, nearest
first then the most connected, the path of each, relation types, limits and bad input by field."""

from __future__ import annotations

import pytest

from adapters.memory.scopes import InMemoryStore
from domain.access.principal import Principal, RequestContext
from domain.errors import NotFoundError, ValidationError
from domain.graph.model import Relation
from domain.graph.usecases import KnowledgeGraph

ME = RequestContext(Principal("local"))


def graph() -> KnowledgeGraph:
    g = KnowledgeGraph(InMemoryStore(), identity=lambda: ME)
    g.create_entities([{"name": n, "entityType": t, "observations": []} for n, t in (
        ("Caroline", "person"), ("Melanie", "person"), ("Sweden", "place"), ("Grandma", "person"),
        ("Art class", "event"), ("Oscar", "pet"))])
    g.create_relations([{"from": a, "to": b, "relationType": t} for a, b, t in (
        ("Caroline", "Melanie", "friend of"), ("Grandma", "Caroline", "grandmother of"),
        ("Grandma", "Sweden", "lives in"), ("Melanie", "Art class", "attends"), ("Caroline", "Art class", "attends"),
        ("Melanie", "Oscar", "owns"), ("Oscar", "Nowhere", "ran to"))])
    return g


def test_nearest_first_then_most_connected_with_their_paths() -> None:
    found = graph().related("Caroline", depth=2)
    assert [(r.name, r.depth, r.links) for r in found] == [
        ("Art class", 1, 1), ("Grandma", 1, 1), ("Melanie", 1, 1), ("Oscar", 2, 1), ("Sweden", 2, 1)]
    sweden = found[-1]
    assert sweden.path == (Relation("Grandma", "Caroline", "grandmother of"), Relation("Grandma", "Sweden", "lives in"))
    assert sweden.entity is not None and sweden.entity.entity_type == "place"
    three = graph().related("Caroline", depth=3)
    assert ("Nowhere", 3) in [(r.name, r.depth) for r in three] and three[-1].entity is None  # no such entity


def test_relation_types_and_limit() -> None:
    assert [r.name for r in graph().related("Caroline", 3, ["attends"])] == ["Art class", "Melanie"]
    assert [r.name for r in graph().related("Caroline", 2, None, 2)] == ["Art class", "Grandma"]


@pytest.mark.parametrize(("arguments", "field"), [({"depth": 4}, "depth"), ({"depth": 0}, "depth"),
                                                  ({"limit": 101}, "limit"), ({"relation_types": "owns"},
                                                                              "relation_types")])
def test_bad_input_names_its_field(arguments, field) -> None:
    with pytest.raises(ValidationError) as refused:
        graph().related("Caroline", **arguments)
    assert refused.value.field == field


def test_an_unknown_entity_or_another_callers_is_not_found() -> None:
    g = graph()
    with pytest.raises(NotFoundError, match="Entity not found: Nobody"):
        g.related("Nobody")
    other = KnowledgeGraph(g.store, identity=lambda: RequestContext(Principal("bob")))
    with pytest.raises(NotFoundError):
        other.related("Caroline")
