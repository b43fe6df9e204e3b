"""The change log (spec 000 §13.4): every write, update, supersession and deletion of a memory, a turn,
an artifact or the caller's graph, in order. It is read off the audit log's entries as they are written
(domain.changes.model.changes_of), in the same transaction: a change row holds the item's id, what kind
of change, the scope it may be asked by (conversation, source) and who may see it (the item's access
fields at the time), never content."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.model import AuditEntry

KINDS = ("added", "changed", "superseded", "deleted")
COLLECTIONS = ("memory", "turn", "artifact", "graph")
# audit action -> change kind, per audited collection (the audit's collection names)
_MEMORY = {"store": "added", "edit": "changed", "delete": "deleted", "expired": "deleted", "import": "added"}
_TURN = {"appended": "added", "replaced": "changed", "delete": "deleted", "expired": "deleted"}
_ARTIFACT = {"ingested": "added", "replaced": "changed", "delete": "deleted", "expired": "deleted",
             "cleanup": "deleted", "resolved": "changed"}
_GRAPH = {"create_entities": "added", "create_relations": "added", "add_observations": "added",
          "delete_entities": "deleted", "delete_observations": "deleted", "delete_relations": "deleted",
          "build_graph": "changed", "unmerge_entity": "changed", "import": "added"}
# Which graph item an action touched (its change's ``item``): an entity by its name, its observations by
# the entity's name, a relation by its label ("Dana -[works in]-> Kitchen"). An import says so itself.
GRAPH_ITEMS = {"create_entities": "entity", "delete_entities": "entity", "unmerge_entity": "entity",
               "create_relations": "relation", "delete_relations": "relation",
               "add_observations": "observations", "delete_observations": "observations"}
_COLLECTIONS = {"memory": ("memory", _MEMORY), "history": ("turn", _TURN), "artifact": ("artifact", _ARTIFACT),
                "graph": ("graph", _GRAPH)}


@dataclass(frozen=True, slots=True)
class Change:
    seq: int
    ts: str
    at: float  # ts as epoch seconds
    kind: str
    collection: str
    item_id: str
    actor: str
    conversation_id: str | None = None
    source: str | None = None
    access: dict[str, Any] = field(default_factory=dict)  # acl, sensitivity, expires_epoch: as ``visible`` reads
    detail: dict[str, Any] = field(default_factory=dict)


def changes_of(entry: AuditEntry) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(kind, collection, item id, detail) of each item an audited write touched; none for other entries."""
    found = _COLLECTIONS.get(entry.collection)
    if found is None or entry.action not in found[1]:
        return []
    collection, kinds = found
    kind = kinds[entry.action]
    detail = {k: v for k, v in entry.detail.items() if k in ("supersedes", "version", "via")}
    if collection == "graph" and (item := entry.detail.get("item") or GRAPH_ITEMS.get(entry.action)):
        detail["item"] = item
    if collection == "memory" and entry.action == "store" and entry.detail.get("supersedes"):
        old = str(entry.detail["supersedes"])
        return [(kind, collection, i, detail) for i in entry.item_ids if i != old] + [
            ("superseded", collection, old, {"superseded_by": next((i for i in entry.item_ids if i != old), None)})]
    return [(kind, collection, str(i), detail) for i in entry.item_ids]
