"""The date signal: a query that writes a date ("on 13 October 2023", "in June", "last year") ranks the
records of that time by the query's words, as a ranking fused with the others. A soft filter: a record
of another time still ranks by its other signals.

Dates are read by a ``DateReader`` (dateparser in production) relative to the records' times: the
newest record the other signals found stands for "now", so a conversation of 2023 asked about in 2026
reads "in June" as June 2023 and "last year" as 2022."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain.errors import ValidationError
from domain.model import Hit
from domain.ports import Filter
from domain.validation import epoch

# (text, reference epoch) -> spans of epoch seconds (start, end) the text's dates name; [] for none.
DateReader = Callable[[str, float], list[tuple[float, float]]]


def hit_time(hit: Hit) -> float | None:
    """When a hit's record was written or happened (an artifact's time, a memory's or turn's)."""
    ts = hit.fields.get("ts") or (hit.fields.get("provenance") or {}).get("ts")
    try:
        return epoch(ts) if isinstance(ts, str) else None
    except ValidationError:
        return None


def newest(ranked: Mapping[str, list[Hit]]) -> float | None:
    """The newest time among hits found so far (the reference of a query's relative dates)."""
    times = [t for hits in ranked.values() for h in hits if (t := hit_time(h)) is not None]
    return max(times) if times else None


def within(where: Filter | None, spans: list[tuple[float, float]]) -> Filter:
    """``where`` held to the time from the spans' first start to their last end (the bounds it had kept)."""
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    clause: dict[str, Any] = dict(where or {})
    bounds = dict(clause.get("ts_epoch") or {})
    bounds["$gte"] = max(start, bounds.get("$gte", start))
    bounds["$lte"] = min(end, bounds.get("$lte", end))
    clause["ts_epoch"] = bounds
    return clause
