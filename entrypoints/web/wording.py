"""The audit log in the page's words: each entry's action and kind as a person says them ("added
relations", "conversation turn"), one vocabulary for the table and its filters. The log keeps its own
names (the tools'); these are only how the page shows them."""

from __future__ import annotations

from typing import Any

KINDS = {"memory": "memory", "history": "conversation turn", "artifact": "artifact", "graph": "knowledge graph",
         "documents": "project document", "sessions": "session memory", "tokens": "token", "code": "code index",
         "profile": "embedding profile"}
# An action on any kind: its verb, the kind said after it ("stored memory").
VERBS = {"store": "stored", "edit": "edited", "delete": "deleted", "denied": "refused", "ingested": "ingested",
         "replaced": "replaced", "appended": "appended", "expired": "expired (retention)", "import": "imported",
         "cleanup": "cleaned up", "resolved": "resolved", "reembed_complete": "re-embedded"}
# The graph tools' actions name their item themselves: a relation is never "graph Dana".
GRAPH = {"create_entities": "added entities", "delete_entities": "deleted entities",
         "create_relations": "added relations", "delete_relations": "deleted relations",
         "add_observations": "added observations", "delete_observations": "deleted observations",
         "build_graph": "built the graph from records", "unmerge_entity": "unmerged an entity"}


def kind(collection: str) -> str:
    return KINDS.get(collection, collection.replace("_", " "))


def action(name: str) -> str:
    """An action as a filter offers it (whatever kind it was done to)."""
    return GRAPH.get(name) or VERBS.get(name) or name.replace("_", " ")


def what(entry: Any) -> str:
    """What an entry did, in words, beside its kind: "added relations" (knowledge graph), "stored"
    (memory), "refused get" (artifact), "imported relation" (an import says which graph item it wrote)."""
    if entry.action == "denied":
        refused = entry.detail.get("refused")
        return f"refused {refused}" if refused else "refused"
    item = entry.detail.get("item") if entry.collection == "graph" and entry.action not in GRAPH else None
    return f"{action(entry.action)} {item}" if item else action(entry.action)
