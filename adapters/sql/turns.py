"""Conversation turns in the SQL store: a turn's row, its lexical entries (its words, and its
neighbours' of the same audience as context), its vectors and its outbox entries, one transaction.
A conversation is its owner's: turns are placed by (conversation id, owner, turn index)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, literal, select
from sqlalchemy.engine import Connection

from adapters.lexical.fts import Doc
from adapters.lexical.context import CONTEXT_TURNS, turn_contexts
from adapters.sql.tables import _profile_values, _turn, access_values, turns
from adapters.sql.vectors import drop_vectors, put_vectors, queue, vectors
from adapters.sql.graph_derived import forget_records
from domain.model import AuditEntry, Turn, VectorRecord
from domain.validation import epoch

CONTEXT = "history_context"
TURN_COLLECTIONS = ("history", CONTEXT)  # a turn's vectors: as said, and as read after the one before
_NEARBY = (turns.c.id, turns.c.turn_index, turns.c.content, turns.c.acl, turns.c.sensitivity)


def _contexts(rows: Sequence[Any]) -> dict[str, str]:
    return turn_contexts([(tid, index, content, (acl, sensitivity)) for tid, index, content, acl, sensitivity in rows])


def turn_docs(conn: Connection) -> Iterator[tuple[str, Doc]]:
    """Every turn's lexical entry, for a rebuild of the index."""
    rows = conn.execute(select(turns.c.conversation_id, turns.c.owner, *_NEARBY)
                        .order_by(turns.c.conversation_id, turns.c.owner, turns.c.turn_index)).tuples()
    for _, group in itertools.groupby(rows, key=lambda row: row[:2]):
        conversation = [row[2:] for row in group]
        contexts = _contexts(conversation)
        for tid, _, content, _, _ in conversation:
            yield "history", Doc(tid, None, None, content, contexts[tid])


def _place(owner: str, conversation_id: str, turn_index: int) -> tuple[Any, ...]:
    """Where a turn is: its owner's conversation, at its index."""
    return turns.c.conversation_id == conversation_id, turns.c.owner == owner, turns.c.turn_index == turn_index


class SqlTurns:
    """Mixed into the SQL store (its transactions, lexical backend and audit)."""

    _lexical: Any

    def put_turn(self, turn: Turn, entry: AuditEntry,
                 vectors: Mapping[str, Sequence[VectorRecord]] | None = None) -> None:
        with self._write() as conn:  # type: ignore[attr-defined]
            old = conn.execute(delete(turns).where(*_place(turn.owner, turn.conversation_id, turn.turn_index))
                               .returning(turns.c.id))
            replaced = [turn.id, *old.scalars().all()]
            self._lexical.unindex_records(conn, "history", replaced)
            forget_records(conn, "turn", replaced)
            conn.execute(insert(turns).values(
                id=turn.id, conversation_id=turn.conversation_id, turn_index=turn.turn_index, role=turn.role,
                content=turn.content, ts=turn.ts, ts_epoch=epoch(turn.ts), token_count=turn.token_count,
                content_hash=turn.content_hash, **_profile_values(turn.profile), **access_values(turn)))
            self._index_turns_around(conn, turn.owner, turn.conversation_id, turn.turn_index)
            for collection, records in (vectors or {}).items():
                drop_vectors(conn, [collection], turn.id)
                put_vectors(conn, collection, turn.id, records)
            queue(conn, sorted(vectors or {}), turn.id)
            self._append(conn, entry)  # type: ignore[attr-defined]

    def delete_turn(self, turn_id: str, entry: AuditEntry) -> bool:
        """The row, its lexical entry (and its words in its neighbours'), its vectors of both kinds; the
        turn after it, read after it until now, is read alone."""
        with self._write() as conn:  # type: ignore[attr-defined]
            gone = conn.execute(delete(turns).where(turns.c.id == turn_id)
                                .returning(turns.c.owner, turns.c.conversation_id, turns.c.turn_index)).first()
            if gone is None:
                return False
            owner, conversation, index = gone
            self._lexical.unindex_records(conn, "history", [turn_id])
            forget_records(conn, "turn", [turn_id])
            self._index_turns_around(conn, owner, conversation, index)
            drop_vectors(conn, TURN_COLLECTIONS, turn_id)
            queue(conn, TURN_COLLECTIONS, turn_id)
            after = conn.execute(select(turns.c.id).where(*_place(owner, conversation, index + 1))).scalar()
            if after is not None:  # it was read after this one: now read alone (its own vectors)
                drop_vectors(conn, [CONTEXT], after)
                columns = [c for c in vectors.c if c.name != "collection"]
                conn.execute(insert(vectors).from_select(
                    ["collection", *(c.name for c in columns)],
                    select(literal(CONTEXT), *columns).where(vectors.c.collection == "history",
                                                             vectors.c.owner == after)))
                queue(conn, [CONTEXT], after)
            self._append(conn, entry)  # type: ignore[attr-defined]
        return True

    def _index_turns_around(self, conn: Connection, owner: str, conversation_id: str, turn_index: int) -> None:
        """(Re)index the turns whose entries hold the words of the turn at ``turn_index`` (it, if it is
        stored, and its neighbours in its owner's conversation), in the caller's transaction."""
        reach = CONTEXT_TURNS
        low, high = max(0, turn_index - 2 * reach), min(2**31 - 1, turn_index + 2 * reach)  # 32-bit column
        nearby = conn.execute(select(*_NEARBY).where(turns.c.owner == owner, turns.c.conversation_id == conversation_id,
                                                     turns.c.turn_index.between(low, high))).tuples().all()
        contexts = _contexts(nearby)
        window = [(tid, content) for tid, index, content, _, _ in nearby if abs(index - turn_index) <= reach]
        self._lexical.unindex_records(conn, "history", [tid for tid, _ in window])
        self._lexical.index(conn, "history", [Doc(tid, None, None, content, contexts[tid]) for tid, content in window])

    def get_turn(self, owner: str, conversation_id: str, turn_index: int) -> Turn | None:
        with self._read() as conn:  # type: ignore[attr-defined]
            row = conn.execute(select(turns).where(*_place(owner, conversation_id, turn_index))).mappings().first()
        return _turn(row) if row else None

    def get_turns(self, ids: Sequence[str]) -> dict[str, Turn]:
        if not ids:
            return {}
        with self._read() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(select(turns).where(turns.c.id.in_(list(ids)))).mappings().all()
        return {row["id"]: _turn(row) for row in rows}

    def recent_turns(self, owner: str, conversation_id: str, limit: int, before: int | None = None) -> list[Turn]:
        query = (select(turns).where(turns.c.conversation_id == conversation_id, turns.c.owner == owner)
                 .order_by(turns.c.turn_index.desc()).limit(limit))
        if before is not None:
            query = query.where(turns.c.turn_index < before)
        with self._read() as conn:  # type: ignore[attr-defined]
            return [_turn(row) for row in reversed(conn.execute(query).mappings().all())]

    def turns_in_order(self, after: tuple[str, str, int] | None, limit: int) -> list[Turn]:
        t = turns.c
        query = select(turns).order_by(t.conversation_id, t.owner, t.turn_index).limit(limit)
        if after is not None:  # the key's own order (its unique index): a range scan
            conversation, owner, index = after
            query = query.where((t.conversation_id > conversation)
                                | ((t.conversation_id == conversation) & (t.owner > owner))
                                | ((t.conversation_id == conversation) & (t.owner == owner) & (t.turn_index > index)))
        with self._read() as conn:  # type: ignore[attr-defined]
            return [_turn(row) for row in conn.execute(query).mappings()]

    def turn_hashes(self) -> dict[str, str]:
        with self._read() as conn:  # type: ignore[attr-defined]
            return dict(conn.execute(select(turns.c.id, turns.c.content_hash)).tuples().all())
