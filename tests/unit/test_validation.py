"""Timestamps and numbers are checked the same way everywhere."""

from __future__ import annotations

import re

import pytest

from domain.errors import ValidationError
from domain.validation import epoch, parse_timestamp, require_id, require_int, require_text


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


@pytest.mark.parametrize("field", ["ts", "time_range_start", "time_range_end"])
@pytest.mark.parametrize("raw", ["0001-01-01T00:00:00+01:00", "0001-01-01T00:59:59.999999+01:00",
                                 "9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59-00:01"])
def test_timestamps_outside_datetime_in_utc_are_refused_by_name(field: str, raw: str) -> None:
    """Year 1 with a positive offset (9999 with a negative one) used to raise OverflowError."""
    with pytest.raises(ValidationError) as raised:
        parse_timestamp(field, raw)
    assert raised.value.field == field
    assert raised.value.message.startswith(f"{field} must be between 0001-01-01 and 9999-12-31 in UTC")


@pytest.mark.parametrize("raw, expected", [
    ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ("0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00Z"),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ("9999-12-31T18:00:00-05:00", "9999-12-31T23:00:00Z"),
])
def test_the_extremes_that_fit_in_utc_are_kept(raw: str, expected: str) -> None:
    assert parse_timestamp("ts", raw) == expected
    assert isinstance(epoch(expected), float)


def test_epoch_of_an_unparsed_value_is_a_validation_error_not_a_crash() -> None:
    with pytest.raises(ValidationError) as raised:
        epoch("0001-01-01T00:00:00+25:00", "time_range_start")
    assert raised.value.field == "time_range_start"


PATTERN = re.compile(r"^mem_[0-9a-f]{32}$")  # the old, "$"-anchored shape: require_id must not rely on it


@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\x00", "0"])
def test_ids_with_anything_after_them_are_refused(tail: str) -> None:
    good = "mem_" + "a" * 32
    assert require_id("memory_id", good, "mem_", PATTERN, "32 hex characters") == good
    with pytest.raises(ValidationError) as raised:
        require_id("memory_id", good + tail, "mem_", PATTERN, "32 hex characters")
    assert raised.value.field == "memory_id" and "memory_id" in raised.value.message
