"""The lexical index inside the SQL store: SQLite FTS5 (BM25) or PostgreSQL full text (tsvector).

Every write goes through the caller's connection, so a row and its index entries commit or roll
back together. ``lexical_docs`` maps each indexed record to an integer id, the FTS rowid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Column, Index, Integer, String, Table, delete, insert, select
from sqlalchemy.engine import Connection

from adapters.sql.base import metadata
from domain.access.rules import ACL_PREFIX
from domain.memories.validity import END, START
from domain.model import LABEL_KEYS, TAG_PREFIX, TAGS, LexicalMatch
from domain.ports import Filter
from domain.search.lexical import LexicalStats, shared_idf

# Memory versions with an end (superseded, or ended by an import) have an index of their own, so that a
# long history does not weigh in how current memories rank by their words (BM25's document frequencies
# and lengths are those of one index); a memory search asks both, held to the time asked.
PAST = "memory_past"
MEMORY_INDEXES = ("memory", PAST)
COLLECTIONS = ("memory", PAST, "history", "artifact", "chunk", "entity")  # entity: domain/graph/entities.py
# The most records one lexical query may score. Ranking by BM25 means scoring every record that
# holds any query word; past this budget the commonest words (the least weighty) are left out, and
# when every word is that common, only the newest records holding them are scored (``newest``).
MATCH_BUDGET = 5_000
# Bump when what is indexed changes: the index is rebuilt from the rows at start. 6: the chunks' index
# keeps no copy of their text; 5: no trigram table (exact tokens are phrases of the word index);
# 4: a turn's context holds only neighbours with its readers.
INDEX_VERSION = "6"

lexical_docs = Table(
    "lexical_docs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("collection", String(16), nullable=False),
    Column("record_id", String(160), nullable=False),
    Column("owner", String(40)),  # the artifact of an artifact or chunk entry
    Column("version", String(12)),
    Index("ix_lexical_docs_record", "collection", "record_id"),
    Index("ix_lexical_docs_owner", "owner", "version"),
)


class Doc(NamedTuple):
    record_id: str
    owner: str | None
    version: str | None
    body: str
    context: str = ""  # words around the record (a turn's neighbours), ranked below its own


# How each collection's entries join the rows that carry its filter fields (alias ``b``).
_JOINS = {
    "memory": ("memories b ON b.id = d.record_id", ("conversation_id", "ts_epoch", "confidence", "type",
                                                    "sensitivity", "expires_epoch", START, END)),
    "history": ("turns b ON b.id = d.record_id", ("conversation_id", "ts_epoch", "sensitivity", "expires_epoch")),
    # A committed version, or a new artifact's first one written words_first (its vectors still to come).
    "artifact": ("artifacts b ON b.artifact_id = d.owner AND b.version = d.version "
                 "AND (b.status = 'committed' OR b.indexing)",
                 ("artifact_type", "source_system", "sensitivity", "visibility_scope", "ts_epoch", "expires_epoch")),
}
_JOINS["chunk"] = _JOINS["artifact"]
_JOINS[PAST] = _JOINS["memory"]
# An entity the graph tools wrote (a record of its own: adapters/sql/graph_records.py).
_JOINS["entity"] = ("graph_entity_records b ON b.record_id = d.record_id", ("sensitivity", "expires_epoch", "ts_epoch"))


def filter_sql(collection: str, where: Filter | None, dialect: str = "sqlite") -> tuple[str, dict[str, Any]]:
    """``AND ...`` conditions on the joined row for a vector-index-style filter, with parameters.

    An artifact's labels (scope fields, ``tag:<name>``) are read from its JSON ``labels`` column.
    """
    allowed = _JOINS[collection][1]
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (name, value) in enumerate(sorted((where or {}).items())):
        if name == "$or":  # of access flags (domain.access.rules): the row's acl list holds one of them
            keys = [f"a{n}_{i}" for i in range(len(value))]
            clauses.append(acl_condition(keys, dialect))
            params.update({key: _access_key(sub) for key, sub in zip(keys, value)})
            continue
        if collection in ("artifact", "chunk") and (name in LABEL_KEYS or name.startswith(TAG_PREFIX)):
            if isinstance(value, dict) and set(value) == {"$in"} and name in LABEL_KEYS:
                keys = [f"f{n}_{i}" for i in range(len(value["$in"]))] or [f"f{n}_none"]
                either = " OR ".join(label_condition(name, key, dialect) for key in keys)
                clauses.append(f"({either})")
                params.update(dict(zip(keys, value["$in"])) if value["$in"] else {keys[0]: "\x00"})
                continue
            clauses.append(label_condition(name, f"f{n}", dialect))
            params[f"f{n}"] = name.removeprefix(TAG_PREFIX) if name.startswith(TAG_PREFIX) else value
            continue
        if name not in allowed:
            raise ValueError(f"the {collection} lexical index cannot filter on {name!r}")
        if isinstance(value, dict) and set(value) == {"$in"}:
            keys = [f"f{n}_{i}" for i in range(len(value["$in"]))]
            clauses.append(f"b.{name} IN ({', '.join(':' + k for k in keys)})" if keys else "1 = 0")
            params.update(dict(zip(keys, value["$in"])))
        elif isinstance(value, dict):
            for op, bound in value.items():
                sign = {"$gte": ">=", "$lte": "<=", "$gt": ">", "$lt": "<"}[op]
                key = f"f{n}{op[1:]}"
                clauses.append(f"b.{name} {sign} :{key}")
                params[key] = bound
        else:
            clauses.append(f"b.{name} = :f{n}")
            params[f"f{n}"] = value
    return "".join(f" AND {c}" for c in clauses), params


def _access_key(flag: dict[str, Any]) -> str:
    (name, value), = flag.items()
    if not name.startswith(ACL_PREFIX) or value is not True:
        raise ValueError(f"the lexical index takes $or of access flags only (got {flag!r})")
    return name[len(ACL_PREFIX):]


def acl_condition(params: Sequence[str], dialect: str, row: str = "b") -> str:
    """SQL true when the row's ``acl`` (a JSON list of access keys) holds one of the :params."""
    if not params:
        return "1 = 0"
    listed = ", ".join(f":{p}" for p in params)
    if dialect == "postgresql":
        cast = ", ".join(f"CAST(:{p} AS text)" for p in params)
        return f"(CAST({row}.acl AS jsonb) ?| ARRAY[{cast}])"
    return f"EXISTS (SELECT 1 FROM json_each({row}.acl) WHERE json_each.value IN ({listed}))"


def label_condition(name: str, param: str, dialect: str, row: str = "b") -> str:
    """SQL true when the artifact row's labels hold ``name`` = :param (a tag: its list holds :param).

    ``name`` is written into the SQL: only LABEL_KEYS and ``tag:`` names are accepted."""
    if name not in LABEL_KEYS and not name.startswith(TAG_PREFIX):
        raise ValueError(f"no label {name!r}: labels are {', '.join(LABEL_KEYS)} and tag:<name>")
    if name.startswith(TAG_PREFIX):
        if dialect == "postgresql":
            return f"jsonb_exists(CAST({row}.labels AS jsonb) -> '{TAGS}', :{param})"
        return f"EXISTS (SELECT 1 FROM json_each({row}.labels, '$.{TAGS}') WHERE json_each.value = :{param})"
    if dialect == "postgresql":
        return f"(CAST({row}.labels AS jsonb) ->> '{name}') = :{param}"
    return f"json_extract({row}.labels, '$.{name}') = :{param}"


class LexicalBackend:
    """Dialect-independent bookkeeping of ``lexical_docs``; subclasses own the text index itself."""

    def create(self, conn: Connection) -> None:
        raise NotImplementedError

    def reset(self, conn: Connection) -> None:
        """Drop the text index (an older layout) so that ``create`` makes it anew."""
        raise NotImplementedError

    def index(self, conn: Connection, collection: str, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        ids = conn.execute(
            insert(lexical_docs).returning(lexical_docs.c.id, sort_by_parameter_order=True),
            [{"collection": collection, "record_id": d.record_id, "owner": d.owner, "version": d.version}
             for d in docs]).scalars().all()
        self._add(conn, collection, list(zip(ids, docs, strict=True)))

    def unindex_records(self, conn: Connection, collection: str, record_ids: Sequence[str]) -> None:
        self._remove(conn, collection, select(lexical_docs.c.id).where(
            lexical_docs.c.collection == collection, lexical_docs.c.record_id.in_(list(record_ids))))

    def unindex_version(self, conn: Connection, owner: str, version: str | None) -> None:
        """Drop an artifact's entries (itself and its chunks): of one version, or of all when None."""
        for collection in ("artifact", "chunk"):
            query = select(lexical_docs.c.id).where(lexical_docs.c.collection == collection,
                                                    lexical_docs.c.owner == owner)
            self._remove(conn, collection, query if version is None else query.where(
                lexical_docs.c.version == version))

    def _remove(self, conn: Connection, collection: str, ids_query: Any) -> None:
        ids = conn.execute(ids_query).scalars().all()
        if ids:
            self._drop(conn, collection, ids)
            conn.execute(delete(lexical_docs).where(lexical_docs.c.id.in_(ids)))

    def rebuild(self, conn: Connection, rows: Iterable[tuple[str, Doc]]) -> None:
        """Drop every entry and index ``rows`` (collection, doc) afresh."""
        self._clear(conn)
        conn.execute(delete(lexical_docs))
        batch: dict[str, list[Doc]] = {c: [] for c in COLLECTIONS}
        for collection, doc in rows:
            batch[collection].append(doc)
            if len(batch[collection]) >= 2_000:
                self.index(conn, collection, batch[collection])
                batch[collection] = []
        for collection, docs in batch.items():
            self.index(conn, collection, docs)

    def search(self, conn: Connection, collection: str, words: Sequence[str], limit: int,
               where: Filter | None, context_weight: float, idf: Mapping[str, float]) -> list[LexicalMatch]:
        """The best ``limit`` records holding the words, each word weighing its ``idf``."""
        raise NotImplementedError

    def stats(self, conn: Connection, collection: str, words: Sequence[str],
              tokens: Sequence[str] = ()) -> LexicalStats:
        """The collection's records and, for each word and token, how many hold it (up to MATCH_BUDGET + 1)."""
        raise NotImplementedError

    def own_idf(self, conn: Connection, collection: str, terms: Sequence[str], exact: bool = False) -> dict[str, float]:
        """Each word's (or exact token's) idf in this collection alone: for a search given none."""
        stats = self.stats(conn, collection, () if exact else terms, terms if exact else ())
        return shared_idf([stats], terms, exact)

    def selective(self, conn: Connection, collection: str, words: Sequence[str]) -> dict[str, int]:
        """The words to match, with the number of records holding each, rarest first (``budgeted``)."""
        return budgeted(self._counts(conn, collection, words, MATCH_BUDGET + 1))

    def _counts(self, conn: Connection, collection: str, words: Sequence[str], cap: int) -> dict[str, int]:
        """For each word, the records holding it, counting no further than ``cap``."""
        return {word: self._count(conn, collection, word, cap) for word in words}

    def _count(self, conn: Connection, collection: str, word: str, cap: int) -> int:
        """Records whose text holds ``word``, counting no further than ``cap``."""
        raise NotImplementedError

    def exact(self, conn: Connection, collection: str, tokens: Sequence[str], limit: int,
              where: Filter | None, idf: Mapping[str, float]) -> list[LexicalMatch]:
        """The best ``limit`` records holding the tokens verbatim, each token weighing its ``idf``."""
        raise NotImplementedError

    def _add(self, conn: Connection, collection: str, rows: list[tuple[int, Doc]]) -> None:
        raise NotImplementedError

    def _drop(self, conn: Connection, collection: str, ids: Sequence[int]) -> None:
        raise NotImplementedError

    def _clear(self, conn: Connection) -> None:
        raise NotImplementedError


def budgeted(counts: Mapping[str, int]) -> dict[str, int]:
    """The words to match (of their counts of holders), rarest first, until the records to score would
    pass MATCH_BUDGET: the commonest words (they weigh least in BM25) are left out."""
    kept: dict[str, int] = {}
    spent = 0
    for word, count in sorted(counts.items(), key=lambda item: item[1]):
        if count == 0:
            continue
        if spent + count > MATCH_BUDGET:
            break
        kept[word] = count
        spent += count
    return kept
