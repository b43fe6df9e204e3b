"""Timestamps and numbers are checked the same way everywhere."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.validation import parse_timestamp, require_int, require_text


@pytest.mark.parametrize("raw, expected", [
    ("2025-12-25T10:30:00Z", "2025-12-25T10:30:00Z"),
    ("2025-12-25T10:30:00.250z", "2025-12-25T10:30:00.250000Z"),
    ("2025-12-25T05:30:00-05:00", "2025-12-25T10:30:00Z"),
    ("2025-12-25", "2025-12-25T00:00:00Z"),
])
def test_timestamps_normalise_to_utc(raw: str, expected: str) -> None:
    assert parse_timestamp("ts", raw) == expected


@pytest.mark.parametrize("raw", ["", "yesterday", "2025-02-30T00:00:00Z", "12/25/2025", 1735120000])
def test_bad_timestamps_name_the_field(raw: object) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_timestamp("ts", raw)
    assert raised.value.field == "ts" and "ts" in raised.value.message


def test_ints_refuse_bools_and_floats() -> None:
    for bad in (True, 1.0, "1"):
        with pytest.raises(ValidationError):
            require_int("limit", bad, 1, 5)


def test_text_limits_are_inclusive() -> None:
    assert require_text("content", "x" * 10, 10) == "x" * 10
    with pytest.raises(ValidationError, match="maximum length of 10"):
        require_text("content", "x" * 11, 10)
    with pytest.raises(ValidationError, match="Missing required field: content"):
        require_text("content", None, 10)
