"""Dates as people write them, read by dateparser: an event's date against its record's time, and the
spans of time a query's dates name (the date signal), against the records' newest time."""

from __future__ import annotations

from datetime import datetime, timezone

from adapters.text.dates import read_spans, resolve_date


def day(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d")


def spans(text: str, reference: str = "2023-08-01") -> list[tuple[str, str]]:
    at = datetime.fromisoformat(reference).replace(tzinfo=timezone.utc).timestamp()
    return [(day(start), day(end)) for start, end in read_spans(text, at)]


def test_an_event_date_prefers_the_past_unless_it_is_to_be_done() -> None:
    assert resolve_date("last Friday", "2024-02-07T10:00:00Z") == "2024-02-02"
    assert resolve_date("Friday", "2024-02-07T10:00:00Z", "future") == "2024-02-09"
    assert resolve_date("June", "2024-02-10T10:00:00Z", "future") == "2024-06-10"
    assert resolve_date("7 May 2023", None) == "2023-05-07"
    assert resolve_date("no date here", "2024-02-07T10:00:00Z") is None


def test_a_query_date_is_a_span_resolved_against_the_reference() -> None:
    assert spans("What painting did Melanie show on October 13, 2023?") == [("2023-10-12", "2023-10-15")]
    assert spans("When did Melanie go camping in June?") == [("2023-06-01", "2023-07-01")]
    assert spans("Where did John go last year?") == [("2022-01-01", "2023-01-01")]
    assert spans("Where did John go last year?", "2026-11-27") == [("2025-01-01", "2026-01-01")]
    assert spans("What did Joanna write yesterday?") == [("2023-07-30", "2023-08-02")]
    assert spans("What did Maria do in April 2023, in 2023?") == [("2023-04-01", "2023-05-01")]  # the narrower


def test_no_date_no_span() -> None:
    assert spans("Who is Caroline?") == []
    assert spans("May I ask what you like?") == []  # the verb, not the month
    assert spans("What happened on the 18th?") == []  # a number alone is no date
