"""What the store holds, for people: artifacts listed page by page, and the store's counts. Each reads
only what the caller may see (the access rule is part of the query, not a filter afterwards)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.access.principal import LOCAL_USER, Identity
from domain.access.rules import access_filter
from domain.errors import ValidationError
from domain.model import ARTIFACT_TYPES, Artifact, RequestContext
from domain.paging import Page, decode_cursor, encode_cursor
from domain.ports import ArtifactScopes
from domain.validation import epoch, require_choice, require_int

MAX_FILTER = 500  # characters of a source system or a source id prefix


def optional_text(name: str, value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_FILTER:
        raise ValidationError(name, f"{name} must be text of at most {MAX_FILTER} characters")
    if "\x00" in value:  # no stored value holds one (PostgreSQL cannot), so it could only fail
        raise ValidationError(name, f"{name} must not contain NUL characters")
    return value


@dataclass(frozen=True, slots=True)
class ListArtifacts:
    """Committed artifacts the caller may see, newest first, optionally of one source system, type or
    source id prefix (a folder ingested by ``memtrove ingest``); page after page with ``cursor``."""

    scopes: ArtifactScopes
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self, source_system: object = None, artifact_type: object = None, source_id_prefix: object = None,
                 limit: object = 50, cursor: object = None, mine: object = False) -> Page[Artifact]:
        where = {"source_system": optional_text("source_system", source_system),
                 "source_id_prefix": optional_text("source_id_prefix", source_id_prefix),
                 "artifact_type": None if artifact_type is None else require_choice("artifact_type", artifact_type,
                                                                                      ARTIFACT_TYPES)}
        if not isinstance(mine, bool):
            raise ValidationError("mine", "mine must be true or false")
        count = require_int("limit", limit, 1, 500)
        context = self.identity()
        if mine:
            where["owner"] = context.principal.user_id
        # The cursor names its listing by a digest of the filters: a long folder path stays a short cursor.
        kind = "artifacts:" + hashlib.sha256("\x1f".join(v or "" for v in where.values()).encode()).hexdigest()[:16]
        position = decode_cursor(cursor, kind)
        before = None
        if position is not None:
            if len(position) != 2 or not isinstance(position[0], (int, float)) or not isinstance(position[1], str):
                raise ValidationError("cursor", "Invalid cursor: pass a next_cursor value returned by this tool, unchanged")
            before = (float(position[0]), position[1])
        rule = access_filter(context, self.now())
        found = self.scopes.find_artifacts({k: v for k, v in where.items() if v}, rule, count + 1, before)
        last = found[count - 1] if len(found) > count else None
        next_cursor = encode_cursor(kind, [epoch(last.ts), last.id]) if last else None
        return Page(found[:count], next_cursor)


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """How much the caller may see is stored: memories by type, turns and conversations, artifacts by
    type and source, chunks, the oldest and newest item; for the server's owner also what the store
    takes on disk (a store-wide figure, like embedding_health's counts)."""

    scopes: ArtifactScopes
    identity: Identity = RequestContext
    now: Callable[[], float] = time.time

    def __call__(self) -> dict[str, Any]:
        context = self.identity()
        counts = self.scopes.tallies(access_filter(context, self.now()))
        if context.principal.user_id == LOCAL_USER:
            counts["database_bytes"] = self.scopes.storage_bytes()
        return counts
