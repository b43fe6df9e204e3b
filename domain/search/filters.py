"""Search filters: validated once, then handed to each collection's index as far as it can honour them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from domain.errors import ValidationError
from domain.model import ARTIFACT_TYPES, SENSITIVITIES, TAG_PREFIX, TAGS, VISIBILITY_SCOPES
from domain.ports import Filter
from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.validation import epoch, parse_timestamp, require_choice, require_text

SCOPE_FIELDS = ("memory_type", "session_id", "session_iter", "agent_id", "task_code", "category", "title", "source",
                "project", "kind", "canonical_key", "doc_class", "pinned", "status")
FILTER_FIELDS = ("artifact_type", "source_system", "sensitivity", "visibility_scope", "time_range_start",
                 "time_range_end", "conversation_id", *SCOPE_FIELDS, TAGS)
ARTIFACT_ONLY = ("artifact_type", "source_system", "sensitivity", "visibility_scope", *SCOPE_FIELDS)


@dataclass(frozen=True, slots=True)
class Filters:
    """Validated filters; each collection receives the part it can honour inside its index."""

    equal: dict[str, object] = field(default_factory=dict)
    since: float | None = None
    until: float | None = None

    def where(self, collection: str) -> Filter | None:
        """The index filter for a collection, or None when a filter excludes the whole collection."""
        clause: dict[str, Any] = {}
        for name, value in self.equal.items():
            applies = ((name in ARTIFACT_ONLY or name.startswith(TAG_PREFIX)) and collection in (WHOLE, CHUNKS)) or (
                name == "conversation_id" and collection in ("memory", "history"))
            if not applies:
                return None
            clause[name] = value
        if self.since is not None or self.until is not None:
            bounds = {op: v for op, v in (("$gte", self.since), ("$lte", self.until)) if v is not None}
            clause["ts_epoch"] = bounds
        return clause


def check_tags(value: object, field: str = TAGS) -> list[str]:
    """Tags: a list of up to 20 strings of 1-100 characters (a single string is one tag)."""
    if value is None:
        return []
    tags = [value] if isinstance(value, str) else value
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValidationError(field, f"{field} must be a list of strings")
    if len(tags) > 20:
        raise ValidationError(field, f"{field} allows at most 20 items (got {len(tags)})")
    return sorted({require_text(field, t, 100, label=field) for t in tags})


def parse_filters(raw: object, **named: object) -> Filters:
    """Filters from a dict (hybrid_search) and/or named arguments (artifact_search)."""
    if raw is not None and not isinstance(raw, dict):
        raise ValidationError("filters", "Invalid filter: filters must be an object")
    values = {**(raw or {}), **{k: v for k, v in named.items() if v is not None}}
    unknown = sorted(set(values) - set(FILTER_FIELDS))
    if unknown:
        raise ValidationError("filters", f"Invalid filter: unknown field {unknown[0]!r}; allowed: {', '.join(FILTER_FIELDS)}")
    equal: dict[str, object] = {}
    choices = {"artifact_type": ARTIFACT_TYPES, "sensitivity": SENSITIVITIES, "visibility_scope": VISIBILITY_SCOPES}
    for name in ("artifact_type", "sensitivity", "visibility_scope"):
        if values.get(name) is not None:
            equal[name] = require_choice(name, values[name], choices[name])
    for name, limit in (("source_system", 100), ("conversation_id", 100), *((f, 500 if f == "title" else 200) for f in SCOPE_FIELDS)):
        if values.get(name) is not None:
            equal[name] = require_text(name, values[name], limit)
    equal.update({f"{TAG_PREFIX}{tag}": True for tag in check_tags(values.get(TAGS))})
    since = epoch(parse_timestamp("time_range_start", values["time_range_start"])) \
        if values.get("time_range_start") is not None else None
    until = epoch(parse_timestamp("time_range_end", values["time_range_end"])) \
        if values.get("time_range_end") is not None else None
    if since is not None and until is not None and since > until:
        raise ValidationError("time_range_start", "Invalid filter: time_range_start is after time_range_end")
    return Filters(equal, since, until)
