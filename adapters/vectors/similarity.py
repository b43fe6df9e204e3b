"""What vector indexes share: cosine similarity and the metadata filter, as Chroma applies it."""

from __future__ import annotations

import math

from domain.model import Vector
from domain.ports import Filter
from domain.search.where import matches  # noqa: F401 - the indexes' filter, shared with the domain


def cosine(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
