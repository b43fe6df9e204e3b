"""artifact_ingest's 10 MB limit counts bytes of UTF-8, not characters."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.artifacts.input import MAX_CONTENT, IngestRequest, utf8_size, validate


def request(content: str) -> IngestRequest:
    return IngestRequest("doc", "drive", content)


@pytest.mark.parametrize("content, size", [
    ("é" * (MAX_CONTENT // 2), MAX_CONTENT),
    ("€" * (MAX_CONTENT // 3) + "x", MAX_CONTENT),
    ("😀" * (MAX_CONTENT // 4), MAX_CONTENT),
    ("x" * MAX_CONTENT, MAX_CONTENT),
])
def test_exactly_ten_megabytes_of_utf8_is_accepted(content: str, size: int) -> None:
    assert utf8_size(content) == size
    assert validate(request(content))["content"] is content


@pytest.mark.parametrize("content, size", [
    ("é" * (MAX_CONTENT // 2 + 1), MAX_CONTENT + 2),  # 5,000,001 characters: 10 MB + 2 bytes
    ("😀" * (MAX_CONTENT // 4) + "x", MAX_CONTENT + 1),
    ("x" * (MAX_CONTENT + 1), MAX_CONTENT + 1),
])
def test_one_byte_over_is_refused_naming_the_field_and_the_limit_in_bytes(content: str, size: int) -> None:
    with pytest.raises(ValidationError) as raised:
        validate(request(content))
    assert raised.value.field == "content"
    message = raised.value.message
    assert message.startswith("Content exceeds maximum size of 10MB")
    assert f"{MAX_CONTENT} bytes" in message and f"got {size} bytes" in message and "'content'" in message


def test_a_lone_surrogate_is_counted_not_a_crash() -> None:
    """JSON may carry "\\ud800"; plain UTF-8 encoding would raise on it."""
    assert utf8_size("a\ud800") == 4
