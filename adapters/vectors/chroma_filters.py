"""What Chroma is given besides vectors: each vector's metadata, trimmed to what it filters on, and filters
in its syntax (one operator per expression)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.model import VectorRecord
from domain.ports import Filter
from domain.upkeep.vector_sync import filtered_fields


# Collections whose vectors' metadata change after they are written: a memory's interval ends when it is
# superseded (domain/memories/validity.py), and its vectors are synced again with the new end.
METADATA_REWRITTEN = frozenset({"memory"})


def metadatas_of(collection: str, records: Sequence[VectorRecord]) -> list[dict[str, Any] | None]:
    # Only what it is asked to filter on: 6 rows a chunk where it kept 12 (1.2 KB of 1.5 KB a chunk).
    return [clean(filtered_fields(collection, {**r.metadata, "record_id": r.record_id})) or None for r in records]


def clean(metadata: dict[str, Any]) -> dict[str, Any]:
    # Chroma metadata values must be str, int, float or bool; None means "absent".
    return {k: v for k, v in metadata.items() if v is not None}


def where_of(where: Filter | None) -> dict[str, Any] | None:
    if not where:
        return None
    # Chroma takes one operator per expression: {"ts": {"$gte": a, "$lte": b}} becomes two clauses;
    # "$or" takes two or more (one alone is itself).
    clauses = [{field: {op: value}} for field, cond in where.items() if field != "$or"
               for op, value in (cond.items() if isinstance(cond, dict) else [("$eq", cond)])]
    if "$or" in where:
        either = [w for w in (where_of(sub) for sub in where["$or"]) if w is not None]
        clauses.append(either[0] if len(either) == 1 else {"$or": either})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
