"""The metadata filter as Chroma applies it: the vector indexes' fakes and the graph signal (whose
records come from no index) hold records to a search's filters with it."""

from __future__ import annotations

from typing import Any

from domain.ports import Filter


def matches(metadata: dict[str, Any], where: Filter | None) -> bool:
    """Equality, $ne, $gt(e), $lt(e) and $in on metadata fields, and ``"$or": [filters]`` (any of them);
    an absent field matches nothing."""
    for field, cond in (where or {}).items():
        if field == "$or":
            if not any(matches(metadata, sub) for sub in cond):
                return False
            continue
        value = metadata.get(field)
        ops = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, expected in ops.items():
            if value is None:
                return False
            if op == "$eq" and value != expected or op == "$ne" and value == expected:
                return False
            if op == "$gte" and not value >= expected or op == "$lte" and not value <= expected:
                return False
            if op == "$gt" and not value > expected or op == "$lt" and not value < expected:
                return False
            if op == "$in" and value not in expected:
                return False
    return True
