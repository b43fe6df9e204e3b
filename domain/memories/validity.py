"""A memory's valid time (spec 000 §13.4): it holds from ``valid_from`` (else when it was stored) until
``valid_to`` (None: still); a superseded one ended when the memory that replaced it began.

A memory holds at a time when that time is inside its interval, [start, end): one whose ``valid_from`` is
still to come does not hold now, and one superseded by a version that begins later still holds until
then. Searches ask the indexes for that interval (``holding``), so versions that do not hold never take
the places of those that do; each memory's vectors carry it (``interval_metadata``), and supersession
rewrites the old version's end in the same transaction as the new version's row."""

from __future__ import annotations

import time

from domain.access.rules import NEVER
from domain.model import Memory
from domain.ports.filters import Filter
from domain.validation import epoch

FIELDS = ("valid_from", "valid_to", "supersedes", "superseded_by")
# What a memory's vectors (and its row, for the lexical index) carry of its interval: epoch seconds,
# the end NEVER while it holds still.
START, END = "valid_from_epoch", "valid_to_epoch"


def validity(memory: Memory) -> dict[str, str]:
    """Its valid-time fields that are set (none for a memory that holds from when it was stored, still)."""
    return {name: value for name in FIELDS if (value := getattr(memory, name))}


def interval(memory: Memory) -> tuple[float, float]:
    """[start, end) in epoch seconds. A superseded memory without an end (only a store edited by hand can
    hold one: supersession and import both record it) is taken to have ended where it began."""
    start = epoch(memory.valid_from or memory.ts)
    if memory.valid_to:
        return start, epoch(memory.valid_to)
    return start, (start if memory.superseded_by else NEVER)


def interval_metadata(memory: Memory) -> dict[str, float]:
    start, end = interval(memory)
    return {START: start, END: end}


def holds(memory: Memory, at: float | None, now: float | None = None) -> bool:
    """Whether it holds at ``at`` (epoch seconds; None: now, ``now`` or the clock's)."""
    moment = at if at is not None else (time.time() if now is None else now)
    start, end = interval(memory)
    return start <= moment < end


def holding(at: float) -> Filter:
    """The index filter of the memories that hold at ``at``."""
    return {START: {"$lte": at}, END: {"$gt": at}}


def ended(memory: Memory) -> bool:
    """Whether it has an end (past or to come): such versions are kept out of the memories' live word
    index, so that a long history weighs nothing in how current memories rank by their words."""
    return bool(memory.valid_to or memory.superseded_by)
