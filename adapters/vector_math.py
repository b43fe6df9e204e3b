"""What vector indexes share: cosine similarity and the metadata filter, as Chroma applies it."""

from __future__ import annotations

import math
from typing import Any

from domain.model import Vector
from domain.ports import Filter


def cosine(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


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
