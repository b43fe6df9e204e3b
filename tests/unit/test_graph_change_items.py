"""The change log tells a graph's relation from its entities (issue 42: "added graph Dana" after
create_relations): each graph change names its item (entity, relation, observations), a relation by its
label, as the graph tools and an import audit it."""

from __future__ import annotations

from domain.changes.model import changes_of
from domain.common import audit
from domain.graph.model import Relation
from domain.graph.usecases import relation_label


def test_each_graph_change_names_its_item_and_a_relation_its_label() -> None:
    works = relation_label(Relation("Dana", "Kitchen", "works in"))
    assert works == "Dana -[works in]-> Kitchen"
    assert changes_of(audit("create_relations", "graph", [works], "t")) == [
        ("added", "graph", works, {"item": "relation"})]
    assert changes_of(audit("create_entities", "graph", ["Dana", "Kitchen"], "t")) == [
        ("added", "graph", "Dana", {"item": "entity"}), ("added", "graph", "Kitchen", {"item": "entity"})]
    assert changes_of(audit("add_observations", "graph", ["Dana"], "t")) == [
        ("added", "graph", "Dana", {"item": "observations"})]
    assert changes_of(audit("delete_relations", "graph", [works], "t")) == [
        ("deleted", "graph", works, {"item": "relation"})]
    assert changes_of(audit("import", "graph", [works], "t", item="relation")) == [
        ("added", "graph", works, {"item": "relation"})]
    assert changes_of(audit("store", "memory", ["mem_1"], "t")) == [("added", "memory", "mem_1", {})]
