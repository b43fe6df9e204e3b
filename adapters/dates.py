"""Dates as people write them ("last Friday", "7 May 2023", "next month"), resolved against the time of
the record they are read in, by dateparser (English; the past preferred: a record tells what happened)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

_PARSE: Any = None


def resolve_date(text: str, base: str | None) -> str | None:
    """``text`` as an ISO date (YYYY-MM-DD) relative to ``base`` (an ISO time; None: now), or None."""
    global _PARSE
    if _PARSE is None:
        import dateparser

        _PARSE = dateparser.parse
    settings: dict[str, Any] = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
    if base:
        try:
            settings["RELATIVE_BASE"] = datetime.fromisoformat(base.replace("Z", "+00:00")).astimezone(
                timezone.utc).replace(tzinfo=None)
        except ValueError:
            pass
    try:
        found = _PARSE(text[:100], languages=["en"], settings=settings)
    except Exception:  # noqa: BLE001 - an unreadable date is no date
        return None
    return found.strftime("%Y-%m-%d") if found is not None and 1 <= found.year <= 9999 else None
