"""Dates as people write them ("last Friday", "7 May 2023", "next month"), resolved against the time of
the record they are read in, by dateparser (English; the past preferred: a record tells what happened)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

_PARSE: Any = None


def resolve_date(text: str, base: str | None, prefer: str = "past") -> str | None:
    """``text`` as an ISO date (YYYY-MM-DD) relative to ``base`` (an ISO time; None: now), or None; a date
    that could be either side of ``base`` ("Friday", "June") is taken from the ``prefer``red one."""
    global _PARSE
    if _PARSE is None:
        import dateparser

        _PARSE = dateparser.parse
    settings: dict[str, Any] = {"PREFER_DATES_FROM": "future" if prefer == "future" else "past",
                                "RETURN_AS_TIMEZONE_AWARE": False}
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


# A date a query writes: a month's name, a year, or a time relative to now ("last week", "3 days ago").
_DATED = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|(?:19|20)\d\d|yesterday|today|tonight|ago"
    r"|(?:last|this|next|past)\s+(?:week(?:end)?|month|year|night|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday))\b", re.IGNORECASE)
_SEARCH: Any = None


def read_spans(text: str, reference: float) -> list[tuple[float, float]]:
    """The spans of time (epoch seconds, start and end) the dates written in ``text`` name, read by
    dateparser relative to ``reference`` (the past preferred): a day (a day either side), a week, a
    month or a year ("May" alone is the verb). Spans that all overlap give their common part (April
    inside 2023 is April 2023); others give the time from the first to the last. Empty when the text
    writes no date."""
    global _SEARCH
    if not _DATED.search(text):
        return []
    if _SEARCH is None:
        from dateparser.date import DateDataParser
        from dateparser.search import search_dates

        _SEARCH = (search_dates, DateDataParser)
    search, parser = _SEARCH
    base = datetime.fromtimestamp(reference, timezone.utc).replace(tzinfo=None)
    settings: dict[str, Any] = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False,
                                "RELATIVE_BASE": base}
    try:
        found = search(text[:500], languages=["en"], settings=settings) or []
        read = parser(languages=["en"], settings=settings)
        spans = [span for written, _ in found if _DATED.search(written) and written.strip().lower() != "may"
                 and (span := _span(read.get_date_data(written))) is not None]
    except Exception:  # noqa: BLE001 - an unreadable date is no date
        return []
    if not spans:
        return []
    start, end = max(s for s, _ in spans), min(e for _, e in spans)
    if start < end:
        return [(start, end)]
    return [(min(s for s, _ in spans), max(e for _, e in spans))]


def _span(data: Any) -> tuple[float, float] | None:
    when = data.date_obj
    if when is None or not 1900 <= when.year <= 2200:
        return None
    when = when.replace(tzinfo=timezone.utc)
    if data.period == "year":
        first = when.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
        last = first.replace(year=first.year + 1)
    elif data.period == "month":
        first = when.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        last = (first + timedelta(days=32)).replace(day=1)
    elif data.period == "week":
        first = when.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
        last = first + timedelta(days=9)
    else:  # a day (or a time of one)
        first = when.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
        last = first + timedelta(days=3)
    return first.timestamp(), last.timestamp()
