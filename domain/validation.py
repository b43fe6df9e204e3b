"""Input checks with the messages of the spec: each names its field and limit."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime, timezone

from domain.errors import ValidationError

_RANGE = "0001-01-01 and 9999-12-31"
MAX_INT64 = 2**63 - 1  # the largest integer a 64-bit column (SQLite, PostgreSQL) holds


def require_present(field: str, value: object) -> None:
    """A required value was sent (not missing, not null)."""
    if value is None:
        raise ValidationError(field, f"Missing required field: {field}")


def require_text(field: str, value: object, max_chars: int, label: str | None = None) -> str:
    """A non-blank string of at most ``max_chars`` characters."""
    name = label or field.capitalize()
    require_present(field, value)
    if not isinstance(value, str):
        raise ValidationError(field, f"{name} must be a string")
    if "\x00" in value:
        raise ValidationError(field, f"{name} must not contain NUL characters (field '{field}')")
    if not _visible(value):
        raise ValidationError(field, f"{name} must not be empty (field '{field}', 1-{max_chars} characters)")
    if len(value) > max_chars:
        raise ValidationError(
            field,
            f"{name} exceeds maximum length of {max_chars} characters (field '{field}', got {len(value)})",
        )
    return value


def require_id(field: str, value: object, prefix: str, pattern: re.Pattern[str], shape: str) -> str:
    """An identifier of the form ``pattern`` (e.g. ``mem_`` + 32 hex characters)."""
    require_present(field, value)
    if not isinstance(value, str) or not value.startswith(prefix):
        raise ValidationError(field, f"Invalid {field}: must start with '{prefix}'")
    # fullmatch: with match() and a "$" pattern, "mem_<32 hex>\n" passed ("$" matches before a final newline).
    if not pattern.fullmatch(value):
        raise ValidationError(field, f"Invalid {field}: expected '{prefix}' followed by {shape}")
    return value


def optional_text(field: str, value: object, max_chars: int, label: str | None = None) -> str | None:
    if value is None:
        return None
    return require_text(field, value, max_chars, label)


def require_int(field: str, value: object, low: int, high: int | None = None) -> int:
    """An integer in [low, high]; bools are not integers here."""
    require_present(field, value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"{field} must be an integer")
    if high is None and value > MAX_INT64:  # past what any store's integer column holds
        raise ValidationError(field, f"{field} must be at most {MAX_INT64} (got {value})")
    if value < low or (high is not None and value > high):
        if high is None:
            raise ValidationError(field, f"{field} must be >= {low} (got {value})")
        label = field.capitalize() if field == "limit" else field
        raise ValidationError(field, f"{label} must be between {low} and {high} (got {value})")
    return value


def require_unit_float(field: str, value: object) -> float:
    """A finite number in [0.0, 1.0]."""
    require_present(field, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(field, f"{field} must be a number between 0.0 and 1.0")
    if not 0.0 <= value <= 1.0:
        raise ValidationError(field, f"{field} must be between 0.0 and 1.0 (got {value})")
    return float(value)


def require_choice(field: str, value: object, choices: Sequence[str]) -> str:
    require_present(field, value)
    if value not in choices:
        raise ValidationError(field, f"Invalid {field}: {value}. Must be one of: {', '.join(choices)}")
    return str(value)


def parse_timestamp(field: str, value: object) -> str:
    """An ISO-8601 timestamp, returned in UTC as ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, f"Invalid {field}: must be an ISO-8601 timestamp")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise ValidationError(
            field, f"Invalid {field}: {value!r} is not an ISO-8601 timestamp (e.g. 2025-12-25T10:30:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return format_ts(parsed)
    except OverflowError:
        # 0001-01-01 with a positive offset (9999-12-31 with a negative one) falls outside datetime in UTC.
        raise ValidationError(field, f"{field} must be between {_RANGE} in UTC (got {value!r})") from None


def format_ts(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds").replace("+00:00", "Z")


def iso(moment: float) -> str:
    """A time in seconds since 1970 written as ``format_ts`` writes it."""
    return format_ts(datetime.fromtimestamp(moment, timezone.utc))


def _visible(text: str) -> bool:
    """Whether anything but whitespace, control and format characters (zero-width space...) is there."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)


def epoch(ts: str, field: str = "ts") -> float:
    """Seconds since 1970 of a timestamp written by ``format_ts``."""
    try:
        moment = datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith(("Z", "z")) else ts)
        if moment.tzinfo is None:  # a time without an offset is UTC, as parse_timestamp reads it
            moment = moment.replace(tzinfo=timezone.utc)
        # In UTC first: 0001-01-01 with a positive offset (9999-12-31 with a negative one) is out of range,
        # here as in parse_timestamp, rather than a time before the documented lower bound.
        return moment.astimezone(timezone.utc).timestamp()
    except (ValueError, OverflowError):
        # Only reached by a value that did not come through parse_timestamp: still a refusal, never a crash.
        raise ValidationError(field, f"{field} must be an ISO-8601 timestamp between {_RANGE} in UTC") from None


def optional_time(field: str, value: object) -> float | None:
    """An ISO-8601 date or time (None: none given) as epoch seconds; anything else refused naming ``field``."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise ValidationError(field, f"{field} must be an ISO-8601 date or time (e.g. 2024-05-01)")
    return epoch(value, field)


MAX_PROJECT = 500  # characters of a project's name (a git remote's project id is far shorter)


def optional_project(value: object) -> str | None:
    """A project named by a caller (None: none): a non-blank string of at most MAX_PROJECT characters,
    without control characters; an integer, a boolean, a list, "" or NUL is refused naming ``project``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError("project", f"project must be a string naming a project (got {type(value).__name__})")
    if not value.strip() or len(value) > MAX_PROJECT:
        raise ValidationError("project", f"project must be 1-{MAX_PROJECT} characters (got {len(value)})")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValidationError("project", "project must not contain control characters (NUL, newline, ...)")
    return value


def optional_span(since: object, until: object) -> tuple[float | None, float | None]:
    """``since`` and ``until`` as ``optional_time`` reads them; ``until`` before ``since`` refused naming it."""
    start, end = optional_time("since", since), optional_time("until", until)
    if start is not None and end is not None and end < start:
        raise ValidationError("until", f"until must not be before since (got since={since!r}, until={until!r})")
    return start, end


def optional_choices(field: str, value: object, allowed: tuple[str, ...]) -> list[str] | None:
    """A non-empty list of some of ``allowed`` (repeats dropped; None: none given), else refused naming ``field``."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or any(v not in allowed for v in value):
        raise ValidationError(field, f"{field} must be a non-empty list of {', '.join(allowed)}")
    return list(dict.fromkeys(value))
