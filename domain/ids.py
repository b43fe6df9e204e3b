"""Identifiers: random ones carry 122 bits, so they stay unique far past 10 million items."""

from __future__ import annotations

import hashlib
import re
import uuid

# \A...\Z, not ^...$: "$" also matches before a final newline, so "mem_<32 hex>\n" would pass a match().
MEMORY_ID = re.compile(r"\Amem_[0-9a-f]{32}\Z")


def new_memory_id() -> str:
    # The spec's 12 hex characters (48 bits) collide with ~16% odds at 10 million memories.
    return f"mem_{uuid.uuid4().hex}"


TURN_ID = re.compile(r"\A(.+)_turn_([0-9]+)(?:~([0-9a-f]{16}))?\Z", re.DOTALL)


def turn_id(conversation_id: str, turn_index: int, owner: str = "local") -> str:
    """A turn's id. Conversation ids are each owner's own: the local owner's turns keep the spec's
    ``{conversation_id}_turn_{turn_index}``; another owner's add ``~`` and 64 bits of SHA-256 of the owner
    (a user id may be 100 characters: the id must fit the 160 of its columns). Such an id never ends in a
    digit after ``_turn_``, so no conversation id of the local owner, whatever its text, gives another
    owner's turn id."""
    if owner == "local":
        return f"{conversation_id}_turn_{turn_index}"
    return f"{conversation_id}_turn_{turn_index}~{owner_key(owner)}"


def owner_key(owner: str) -> str:
    """The 16 hex characters that stand for an owner in its turns' ids."""
    return hashlib.sha256(owner.encode()).hexdigest()[:16]


def turn_of(record_id: str) -> tuple[str, int] | None:
    """The conversation and index of a turn's id (``turn_id``'s inverse, less the owner); None for another id."""
    found = TURN_ID.fullmatch(record_id)
    return (found.group(1), int(found.group(2))) if found and found.group(2).isascii() else None


def piece_id(record_id: str, content_hash: str, index: int) -> str:
    """A vector id: the record, the version of its content, and which piece of it."""
    return f"{record_id}::{content_hash[:12]}::{index}"


def record_of(vector_id: str) -> str:
    """The record a vector id (``piece_id``) belongs to."""
    return vector_id.rsplit("::", 2)[0]


def version_of(vector_id: str) -> str:
    """The content version a vector (``piece_id``) was embedded from."""
    return vector_id.rsplit("::", 2)[1]


ARTIFACT_ID = re.compile(r"\Aart_[0-9a-f]{32}\Z")


def artifact_id(source_system: str, source_id: str | None, content_hash: str, owner: str = "local") -> str:
    """``art_`` + 128 bits of SHA-256 (the spec's 32 bits collide with ~69% odds at 100,000). Each owner
    names its own artifacts (the local owner's keep the ids they always had): one caller's source id
    or content never reaches another's artifact."""
    mine = "" if owner == "local" else f"\x1e{owner}"
    if source_id is None and not mine:
        return f"art_{content_hash[:32]}"
    if source_id is None:
        return f"art_{hashlib.sha256(f'{content_hash}{mine}'.encode()).hexdigest()[:32]}"
    key = f"{source_system}\x1f{source_id}{mine}".encode()
    return f"art_{hashlib.sha256(key).hexdigest()[:32]}"


def chunk_id(artifact: str, index: int, content_hash: str) -> str:
    return f"{artifact}::chunk::{index:03d}::{content_hash[:8]}"


def artifact_of(record_id: str) -> str:
    """The artifact a chunk or artifact id belongs to."""
    return record_id.split("::", 1)[0]
