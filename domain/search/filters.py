"""Search filters: validated once, then handed to each collection's index as far as it can honour them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.errors import ValidationError
from domain.model import ARTIFACT_TYPES, SENSITIVITIES, VISIBILITY_SCOPES
from domain.ports import Filter
from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.validation import epoch, parse_timestamp, require_choice, require_text

FILTER_FIELDS = ("artifact_type", "source_system", "sensitivity", "visibility_scope", "time_range_start",
                 "time_range_end", "conversation_id")
ARTIFACT_ONLY = ("artifact_type", "source_system", "sensitivity", "visibility_scope")


@dataclass(frozen=True, slots=True)
class Filters:
    """Validated filters; each collection receives the part it can honour inside its index."""

    equal: dict[str, str] = field(default_factory=dict)
    since: float | None = None
    until: float | None = None

    def where(self, collection: str) -> Filter | None:
        """The index filter for a collection, or None when a filter excludes the whole collection."""
        clause: dict[str, Any] = {}
        for name, value in self.equal.items():
            applies = (name in ARTIFACT_ONLY and collection in (WHOLE, CHUNKS)) or (
                name == "conversation_id" and collection in ("memory", "history"))
            if not applies:
                return None
            clause[name] = value
        if self.since is not None or self.until is not None:
            bounds = {op: v for op, v in (("$gte", self.since), ("$lte", self.until)) if v is not None}
            clause["ts_epoch"] = bounds
        return clause


def parse_filters(raw: object, **named: object) -> Filters:
    """Filters from a dict (hybrid_search) and/or named arguments (artifact_search)."""
    if raw is not None and not isinstance(raw, dict):
        raise ValidationError("filters", "Invalid filter: filters must be an object")
    values = {**(raw or {}), **{k: v for k, v in named.items() if v is not None}}
    unknown = sorted(set(values) - set(FILTER_FIELDS))
    if unknown:
        raise ValidationError("filters", f"Invalid filter: unknown field {unknown[0]!r}; allowed: {', '.join(FILTER_FIELDS)}")
    equal: dict[str, str] = {}
    choices = {"artifact_type": ARTIFACT_TYPES, "sensitivity": SENSITIVITIES, "visibility_scope": VISIBILITY_SCOPES}
    for name in ("artifact_type", "sensitivity", "visibility_scope"):
        if values.get(name) is not None:
            equal[name] = require_choice(name, values[name], choices[name])
    for name, limit in (("source_system", 100), ("conversation_id", 100)):
        if values.get(name) is not None:
            equal[name] = require_text(name, values[name], limit)
    since = epoch(parse_timestamp("time_range_start", values["time_range_start"])) \
        if values.get("time_range_start") is not None else None
    until = epoch(parse_timestamp("time_range_end", values["time_range_end"])) \
        if values.get("time_range_end") is not None else None
    if since is not None and until is not None and since > until:
        raise ValidationError("time_range_start", "Invalid filter: time_range_start is after time_range_end")
    return Filters(equal, since, until)
