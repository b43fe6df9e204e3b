"""A memory's valid time (spec 000 §13.4): it holds from ``valid_from`` (else when it was stored) until
``valid_to`` (None: still); a superseded one ended when the memory that replaced it began."""

from __future__ import annotations

from domain.model import Memory
from domain.validation import epoch

FIELDS = ("valid_from", "valid_to", "supersedes", "superseded_by")


def validity(memory: Memory) -> dict[str, str]:
    """Its valid-time fields that are set (none for a memory that holds from when it was stored, still)."""
    return {name: value for name in FIELDS if (value := getattr(memory, name))}


def holds(memory: Memory, at: float | None) -> bool:
    """Whether it holds at ``at`` (epoch seconds; None: now, i.e. neither superseded nor ended)."""
    if at is None:
        return memory.superseded_by is None and memory.valid_to is None
    return epoch(memory.valid_from or memory.ts) <= at and (memory.valid_to is None or at < epoch(memory.valid_to))
