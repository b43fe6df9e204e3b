"""A memory's interval in the SQL store (domain/memories/validity.py): the row's epoch columns, which the
lexical index filters on; which word index holds it (its versions with an end are kept out of the live
one); its vectors' metadata, rewritten when supersession ends it; and the upgrade of older stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import bindparam, inspect, insert, or_, select, text, update
from sqlalchemy.engine import Connection

from adapters.lexical.fts import PAST, Doc, LexicalBackend
from adapters.sql.tables import _memory, memories, put_meta, store_meta
from adapters.sql.vector_meta import pack, unpack
from adapters.sql.vectors import outbox, vectors
from domain.access.rules import NEVER
from domain.ids import record_of
from domain.memories.validity import END, START, ended, interval_metadata
from domain.model import LexicalMatch, Memory, VectorRecord

UPGRADED = "memory_intervals"  # store_meta: rows and vectors carry their interval
SPLIT = "memory_past_index"  # store_meta: versions with an end are in their own word index
_BATCH = 1_000


def word_index(memory: Memory) -> str:
    """The lexical collection a memory's words are in."""
    return PAST if ended(memory) else "memory"


def end_memory(conn: Connection, lexical: LexicalBackend, memory_id: str, valid_to: str, successor: str) -> str | None:
    """In the caller's transaction: the memory ends at ``valid_to``, superseded by ``successor``: its row,
    its words (into the index of versions with an end) and its vectors' interval (queued for the index).
    None when done; else why nothing was written: "missing" or "superseded" (already)."""
    row = conn.execute(select(memories).where(memories.c.id == memory_id)).mappings().first()
    if row is None:
        return "missing"
    old = replace(_memory(row), valid_to=valid_to, superseded_by=successor)
    done = conn.execute(update(memories).where(memories.c.id == memory_id, memories.c.superseded_by.is_(None))
                        .values(valid_to=valid_to, superseded_by=successor, **interval_metadata(old))).rowcount
    if not done:
        return "superseded"
    lexical.unindex_records(conn, "memory", [memory_id])
    lexical.index(conn, PAST, [Doc(memory_id, None, None, old.content)])
    restamp(conn, {memory_id: interval_metadata(old)})
    return None


def restamp(conn: Connection, intervals: Mapping[str, Mapping[str, float]]) -> None:
    """The stored vectors of these memories carry their intervals; their owners are queued, so the vector
    index gets them too."""
    owners = sorted(intervals)
    for start in range(0, len(owners), _BATCH):
        part = owners[start:start + _BATCH]
        rows = conn.execute(select(vectors.c.id, vectors.c.owner, vectors.c.meta).where(
            vectors.c.collection == "memory", vectors.c.owner.in_(part))).all()
        # Only vectors whose interval differs from their row's are rewritten and queued: an adoption of vectors
        # that already say it (a model switch, an older release's index) leaves the index as it is.
        stale = [(row, meta) for row in rows if any(
            (meta := unpack("memory", row.id, row.meta)).get(k) != v for k, v in intervals[row.owner].items())]
        changed = [{"vid": row.id, "packed": pack("memory", VectorRecord(row.id, record_of(row.id), [], {
            **meta, **intervals[row.owner]}))} for row, meta in stale]
        if changed:
            conn.execute(update(vectors).where(vectors.c.collection == "memory", vectors.c.id == bindparam("vid"))
                         .values(meta=bindparam("packed")), changed)
            conn.execute(insert(outbox), [{"collection": "memory", "owner": o, "fresh": False}
                                          for o in sorted({row.owner for row, _ in stale})])


def add_interval_columns(conn: Connection) -> None:
    """Memories of a store made before their intervals were kept get the columns (filled by ``upgrade``)."""
    have = {c["name"] for c in inspect(conn).get_columns("memories")}
    for name in (START, END):
        if name not in have:
            conn.execute(text(f"ALTER TABLE memories ADD COLUMN {name} FLOAT"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_memories_{END} ON memories ({END})"))


def upgrade(conn: Connection) -> None:
    """Once per store: every memory's row and vectors get its interval (its vectors are queued for the
    index). A store made by this release does it over no memory."""
    if conn.execute(select(store_meta.c.value).where(store_meta.c.key == UPGRADED)).scalar() is not None:
        return
    found = restamp_all(conn)
    rows = [{"mid": mid, "s": values[START], "e": values[END]} for mid, values in found.items()]
    for start in range(0, len(rows), _BATCH):
        conn.execute(update(memories).where(memories.c.id == bindparam("mid"))
                     .values({START: bindparam("s"), END: bindparam("e")}), rows[start:start + _BATCH])
    put_meta(conn, UPGRADED, "1")


def restamp_all(conn: Connection) -> dict[str, dict[str, float]]:
    """Every memory's vectors carry the interval its row says (queued); each memory's interval."""
    found = {m.id: interval_metadata(m) for m in _all(conn)}
    restamp(conn, found)
    return found


def split_words(conn: Connection, lexical: LexicalBackend, rebuilt: bool) -> None:
    """Once per store: the words of versions with an end leave the live word index for their own (a word
    index ``rebuilt`` from the rows has them there already)."""
    if conn.execute(select(store_meta.c.value).where(store_meta.c.key == SPLIT)).scalar() is not None:
        return
    if not rebuilt:
        m = memories.c
        past = conn.execute(select(m.id, m.content).where(or_(m.valid_to.is_not(None),
                                                              m.superseded_by.is_not(None)))).all()
        for start in range(0, len(past), _BATCH):
            part = past[start:start + _BATCH]
            lexical.unindex_records(conn, "memory", [row.id for row in part])
            lexical.index(conn, PAST, [Doc(row.id, None, None, row.content) for row in part])
    put_meta(conn, SPLIT, "1")


def word_rows(conn: Connection) -> Iterator[tuple[str, Doc]]:
    """Every memory's words, each for its word index (a rebuild)."""
    m = memories.c
    for record_id, content, valid_to, superseded_by in conn.execute(select(m.id, m.content, m.valid_to,
                                                                           m.superseded_by)):
        yield (PAST if valid_to or superseded_by else "memory"), Doc(record_id, None, None, content)


def _all(conn: Connection) -> Iterator[Memory]:
    for row in conn.execute(select(memories)).mappings():
        yield _memory(row)


def search_both(conn: Connection, search: Callable[[str], Sequence[LexicalMatch]], limit: int,
                where: Mapping[str, Any] | None) -> list[LexicalMatch]:
    """A memory search by words: the live index, and the index of versions with an end when the search
    asks for a time (the domain always does; another caller gets the versions without an end) at which
    one of them holds (a search of now seldom finds one: only a version superseded by one still to begin)."""
    bound = (where or {}).get(END)
    at = bound.get("$gt") if isinstance(bound, dict) else None
    if at is None or not _past_holds(conn, float(at)):
        return list(search("memory"))
    found = [m for collection in ("memory", PAST) for m in search(collection)]
    return sorted(found, key=lambda m: -m.score)[:limit]


def _past_holds(conn: Connection, at: float) -> bool:
    """Whether a version with an end holds at ``at`` (the index on the end serves it)."""
    m = memories.c
    return conn.execute(select(m.id).where(m[END] > at, m[END] < NEVER, m[START] <= at).limit(1)).first() is not None
