"""Conversation ids became each owner's own (issue 41): a store made before gets turns placed by
(conversation id, owner, turn index), and the turns of owners other than the local one, whose ids were
taken when one id was one conversation (``{conversation}_turn_{index}``), their owner's ids
(domain/ids.py ``turn_id``) everywhere that names them: the row, its lexical entries, its vectors (queued:
the vector index drops the old ids and takes the new), its graph evidence, sources and events, the change
log and the re-embed ledger. Without that, the local owner's first turn in such a conversation id would
take the id of another's stored turn. Each step looks first; a store_meta mark says it all ran.
"""

from __future__ import annotations

import logging

from sqlalchemy import inspect, select, text
from sqlalchemy.engine import Connection

from adapters.sql.tables import put_meta, store_meta, turns
from adapters.sql.vectors import queue
from domain.access.principal import LOCAL_USER
from domain.ids import turn_id

DONE = "turn_keys"  # store_meta: the upgrade ran
BEFORE = "turns_before_owner_keys"  # the table of the old shape while SQLite copies it
COLLECTIONS = ("history", "history_context")
log = logging.getLogger(__name__)
# What names a turn by its id, besides the turns row (tables of other modules: named here, not imported,
# since those modules import the store).
RENAMES = (
    "UPDATE lexical_docs SET record_id = :new WHERE collection = 'history' AND record_id = :old",
    "UPDATE graph_evidence SET origin_id = :new WHERE origin_kind = 'turn' AND origin_id = :old",
    "UPDATE graph_sources SET origin_id = :new WHERE origin_kind = 'turn' AND origin_id = :old",
    "UPDATE graph_events SET origin_id = :new WHERE origin_kind = 'turn' AND origin_id = :old",
    "UPDATE changes SET item_id = :new WHERE collection = 'turn' AND item_id = :old",
    "UPDATE reembed_ledger SET record_key = 'turn:' || CAST(:new AS VARCHAR) "
    "WHERE record_key = 'turn:' || CAST(:old AS VARCHAR)",
    # A vector's id is its record's id, then "::<version>::<piece>".
    "UPDATE vectors SET owner = :new, id = CAST(:new AS VARCHAR) || substr(id, :cut) "
    "WHERE collection IN ('history', 'history_context') AND owner = :old",
)


def migrate_turn_keys(conn: Connection) -> None:
    if conn.execute(select(store_meta.c.value).where(store_meta.c.key == DONE)).scalar() is not None:
        return
    _reshape(conn)
    moved = _rekey(conn)
    put_meta(conn, DONE, "1")
    if moved:
        log.warning("conversation ids are each owner's own now: %d turn(s) of callers other than the local "
                    "owner got their owner's turn ids", moved)


def _reshape(conn: Connection) -> None:
    """The unique key (conversation_id, turn_index) becomes (conversation_id, owner, turn_index)."""
    names = inspect(conn).get_table_names()
    if BEFORE not in names:
        keys = inspect(conn).get_unique_constraints("turns")
        if not any(k["column_names"] == ["conversation_id", "turn_index"] for k in keys):
            return
        if conn.dialect.name == "postgresql":  # transactional DDL: all of it or none
            old = next(k["name"] for k in keys if k["column_names"] == ["conversation_id", "turn_index"])
            conn.execute(text(f'ALTER TABLE turns DROP CONSTRAINT "{old}"'))
            conn.execute(text("ALTER TABLE turns ADD CONSTRAINT uq_turn_owner_position "
                              "UNIQUE (conversation_id, owner, turn_index)"))
            return
        # SQLite cannot drop a constraint: the table is made again and its rows copied. SQLite may commit
        # each DDL statement on its own, so every step below can be taken again after a crash.
        for index in inspect(conn).get_indexes("turns"):
            conn.execute(text(f'DROP INDEX IF EXISTS "{index["name"]}"'))
        conn.execute(text(f"ALTER TABLE turns RENAME TO {BEFORE}"))
        names = [n for n in names if n != "turns"]
    if "turns" not in names:
        turns.create(conn)
    columns = {c["name"] for c in inspect(conn).get_columns(BEFORE)}
    shared = ", ".join(c.name for c in turns.columns if c.name in columns)
    conn.execute(text(f"INSERT OR IGNORE INTO turns ({shared}) SELECT {shared} FROM {BEFORE}"))
    conn.execute(text(f"DROP TABLE {BEFORE}"))
    conn.execute(text("CREATE INDEX IF NOT EXISTS ix_turns_expires ON turns (expires_epoch)"))


def _rekey(conn: Connection) -> int:
    """Another owner's turns with an id of the local owner's form get their owner's; 0 when none has."""
    t = turns.c
    rows = conn.execute(select(t.id, t.conversation_id, t.turn_index, t.owner).where(t.owner != LOCAL_USER)).tuples()
    moves = [(old, turn_id(conversation, index, owner)) for old, conversation, index, owner in rows
             if old == turn_id(conversation, index)]
    if not moves:
        return 0
    params = [{"old": old, "new": new, "cut": len(old) + 1} for old, new in moves]
    conn.execute(text("UPDATE turns SET id = :new WHERE id = :old"), [{"old": p["old"], "new": p["new"]}
                                                                      for p in params])
    tables = set(inspect(conn).get_table_names())
    for statement in RENAMES:
        if statement.split()[1] not in tables:  # a store without that part (its module not in use)
            continue
        cut = ":cut" in statement
        conn.execute(text(statement), [p if cut else {"old": p["old"], "new": p["new"]} for p in params])
    for old, new in moves:  # the vector index follows: the old ids go, the new come
        queue(conn, COLLECTIONS, old)
        queue(conn, COLLECTIONS, new)
    return len(moves)
