"""Cursor paging for list-like reads: an opaque cursor names where the previous page stopped."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from domain.errors import ValidationError

T = TypeVar("T")
MAX_CURSOR = 500


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page, and the cursor of the next (None: this was the last). Iterates like its items."""

    items: list[T]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]


def encode_cursor(kind: str, position: list[Any]) -> str:
    raw = json.dumps({"k": kind, "p": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(value: object, kind: str) -> list[Any] | None:
    """The position a cursor of ``kind`` names; None for no cursor; a ValidationError for a bad one."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_CURSOR:
        raise ValidationError("cursor", f"cursor must be a next_cursor value returned by this tool "
                                        f"(1-{MAX_CURSOR} characters)")
    try:
        data = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("k") != kind or not isinstance(data.get("p"), list):
        raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
    return data["p"]
