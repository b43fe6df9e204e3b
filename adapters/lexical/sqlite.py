"""SQLite's lexical index: an FTS5 table per collection (porter stemming, BM25 via bm25()).

Exact tokens (identifiers, paths, codes) are looked up in the same word index, as phrases of their
parts (``get_user_by_id`` is the phrase "get user by id"), then checked verbatim against the
record's text. An index of its own (FTS5 trigrams) held every text a third time: at 1.2 KB chunks
it was the largest table of the store, 3.9 KB a chunk.

The chunks' table is contentless (``content=''``): a chunk's text is in its row already, and a copy
in the index cost 1.2 KB a chunk. Its entries are removed with FTS5's 'delete' command, given the
text they were indexed with, read from the chunk rows: so they are unindexed before those rows go.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from adapters.lexical import fts
from adapters.lexical.fts import _JOINS, COLLECTIONS, Doc, LexicalBackend, filter_sql
from domain.chunk_checks import situating_text
from domain.errors import StorageError
from domain.model import LexicalMatch
from domain.ports import Filter
from domain.search.lexical import LexicalStats, bm25_term

CONTENTLESS = frozenset({"chunk"})  # collections whose index keeps no copy of the text
# The text a record was indexed with (its ``body``), for the verbatim check of exact tokens.
_BODY = {"chunk": "(SELECT ch.content FROM artifact_chunks ch WHERE ch.artifact_id = d.owner "
                  "AND ch.version = d.version AND ch.chunk_id = d.record_id)"}
SHORTLIST = 8  # x limit: the best matches FTS5 hands on to be joined and filtered before all of them are

def _any(words: Sequence[str], joiner: str, context_weight: float) -> str:
    """An FTS5 query of the words joined by ``joiner`` (" OR ", " AND "); of the record's own words
    only (its ``body``) when context counts nothing."""
    if not words:
        return ""
    query = joiner.join(_quoted(w) for w in words)
    return f"body : ({query})" if context_weight <= 0 else query


def _ranked(rows: Sequence[Any]) -> list[LexicalMatch]:
    return [LexicalMatch(record_id, -rank) for record_id, rank in rows]


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class SqliteFts5(LexicalBackend):
    """Per collection an FTS5 table for words (Porter stemming, Unicode folding, BM25)."""

    WORDS = "tokenize='porter unicode61 remove_diacritics 2'"

    def create(self, conn: Connection) -> None:
        for collection in COLLECTIONS:
            kept = ", content=''" if collection in CONTENTLESS else ""
            conn.execute(text(f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{collection} USING fts5(body, context, "
                              f"{self.WORDS}{kept})"))

    def reset(self, conn: Connection) -> None:
        for collection in COLLECTIONS:
            conn.execute(text(f"DROP TABLE IF EXISTS fts_{collection}"))
            conn.execute(text(f"DROP TABLE IF EXISTS tri_{collection}"))  # the exact-token index of index version < 5

    def _add(self, conn: Connection, collection: str, rows: list[tuple[int, Doc]]) -> None:
        conn.execute(text(f"INSERT INTO fts_{collection}(rowid, body, context) VALUES (:id, :body, :context)"),
                     [{"id": i, "body": d.body, "context": d.context} for i, d in rows])

    def _drop(self, conn: Connection, collection: str, ids: Sequence[int]) -> None:
        if collection not in CONTENTLESS:
            conn.execute(text(f"DELETE FROM fts_{collection} WHERE rowid IN :ids").bindparams(
                bindparam("ids", expanding=True)), {"ids": list(ids)})
            return
        rows = conn.execute(text(
            "SELECT d.id, ch.content, ch.meta FROM lexical_docs d JOIN artifact_chunks ch ON ch.artifact_id = d.owner "
            "AND ch.version = d.version AND ch.chunk_id = d.record_id WHERE d.id IN :ids").bindparams(
            bindparam("ids", expanding=True)), {"ids": list(ids)}).all()
        if len(rows) != len(set(ids)):
            raise StorageError(f"{len(set(ids)) - len(rows)} chunk entries cannot leave the word index: their rows "
                               "were deleted first")
        conn.execute(text(f"INSERT INTO fts_{collection}(fts_{collection}, rowid, body, context) "
                          "VALUES ('delete', :id, :body, :context)"),
                     [{"id": i, "body": body, "context": situating_text(json.loads(meta or "{}"))}
                      for i, body, meta in rows])

    def _clear(self, conn: Connection) -> None:
        for collection in COLLECTIONS:
            if collection in CONTENTLESS:
                conn.execute(text(f"INSERT INTO fts_{collection}(fts_{collection}) VALUES ('delete-all')"))
            else:
                conn.execute(text(f"DELETE FROM fts_{collection}"))

    def search(self, conn: Connection, collection: str, words: Sequence[str], limit: int,
               where: Filter | None, context_weight: float, idf: Mapping[str, float]) -> list[LexicalMatch]:
        """FTS5 shortlists the best matches by its own BM25 (its idf: this table's); the shortlist is
        ranked again with the ``idf`` given (``_rescored``) before it is joined and filtered."""
        words = [w for w in words if w in idf]  # a word the search gives no weight is not matched
        if not words:
            return []
        table, weights = f"fts_{collection}", f"1.0, {max(0.0, float(context_weight))}"
        counts = self._counts(conn, collection, words, fts.MATCH_BUDGET + 1)
        kept = fts.budgeted(counts)
        if kept:
            return _ranked(self._match(conn, table, collection, _any(kept, " OR ", context_weight), limit, where,
                                       weights, rescore=self._rescorer(conn, table, kept, idf, weights)))
        if fts.MATCH_BUDGET <= 0:
            return []
        rescore = self._rescorer(conn, table, {w: counts[w] for w in words if counts[w]}, idf, weights)
        for joiner in (" AND ", " OR "):  # every word is common: the newest records holding all of them, else any
            found = self._match(conn, table, collection, _any(words, joiner, context_weight), limit, where, weights,
                                newest=fts.MATCH_BUDGET, rescore=rescore)
            if found:
                return _ranked(found)
        return []

    def _rescorer(self, conn: Connection, table: str, holders: Mapping[str, int], idf: Mapping[str, float],
                  weights: str) -> Callable[[Sequence[Any]], list[tuple[int, float]]]:
        """Ranks FTS5's shortlist (rowid, rank) again as FTS5's BM25 with each word weighing its ``idf``:
        the sum over words of idf x the word's saturated term frequency in the record (its neighbours'
        words at their weight, lengths normalised in this table). Best first, as (rowid, -score).

        FTS5's bm25() takes no idf of ours. Its score of a one-word query is its own idf of the word
        times that term-frequency part, and its idf comes from the word's holders among the table's
        records (``holders``, counted as bm25() counts: exactly up to MATCH_BUDGET, in full past it when
        that matters), so dividing it out leaves the term-frequency part. At FTS5's floor (1e-6: a word in
        half the records or more) the division is as exact (floating point keeps relative precision)."""
        words = [w for w in holders if w in idf]
        one = len(words) == len(holders) == 1  # the shortlist's rank is that word's own already
        total = _averages(conn, table)[0]

        def rescore(best: Sequence[Any]) -> list[tuple[int, float]]:
            if not best or not words:
                return []
            parts = [f"SELECT {i}, NULL, count(*) FROM {table} WHERE {table} MATCH :q{i}"
                     for i, w in enumerate(words) if holders[w] > fts.MATCH_BUDGET and 2 * holders[w] < total]
            if not one:
                parts += [f"SELECT {i}, rowid, bm25({table}, {weights}) FROM {table} WHERE {table} MATCH :q{i} "
                          "AND rowid BETWEEN :lo AND :hi AND +rowid IN (SELECT value FROM json_each(:ids))"
                          for i in range(len(words))]  # +rowid: no seek per rowid (bm25() recounts each time)
            rids = sorted(rid for rid, _ in best)
            found = conn.execute(text(" UNION ALL ".join(parts)), {
                "lo": rids[0], "hi": rids[-1], "ids": json.dumps(rids),
                **{f"q{i}": _quoted(w) for i, w in enumerate(words)}}).all() if parts else []
            if one:
                found += [(0, rid, rank) for rid, rank in best]
            held = {**{i: holders[w] for i, w in enumerate(words)}, **{i: n for i, rid, n in found if rid is None}}
            # idf given / FTS5's own idf (max(log((N - n + 0.5) / (n + 0.5)), 1e-6)), per word
            ratio = {i: idf[w] / max(math.log((total - held[i] + 0.5) / (held[i] + 0.5)), 1e-6)
                     for i, w in enumerate(words)}
            scores: dict[int, float] = {}
            for i, rid, rank in found:
                if rid is not None:
                    scores[rid] = scores.get(rid, 0.0) - ratio[i] * float(rank)
            ranked = [(rid, -scores[rid]) for rid, _ in best if scores.get(rid, 0.0) > 0]
            return sorted(ranked, key=lambda pair: pair[1])  # stable: ties keep FTS5's order

        return rescore

    def stats(self, conn: Connection, collection: str, words: Sequence[str],
              tokens: Sequence[str] = ()) -> LexicalStats:
        """FTS5's count of records, and each word's and token's holders (as phrases, in any column: as a
        search finds them, a turn also by its neighbours' words, a chunk by its headings)."""
        counts = self._counts(conn, collection, list(dict.fromkeys([*words, *tokens])), fts.MATCH_BUDGET + 1)
        return LexicalStats(_averages(conn, f"fts_{collection}")[0], {w: counts[w] for w in words},
                            {t: counts[t] for t in tokens})

    def exact(self, conn: Connection, collection: str, tokens: Sequence[str], limit: int,
              where: Filter | None, idf: Mapping[str, float]) -> list[LexicalMatch]:
        """Verbatim occurrences (case folded) in a record's own text; of a token that common, in the
        newest MATCH_BUDGET records holding its words. Each token is an FTS5 phrase of its parts (the
        index's own tokenizer splits it), and the record must hold the token itself. The records are
        ranked by BM25 of the token's verbatim occurrences (a phrase's also counts "command line" for
        ``command-line``), each token weighing its ``idf``."""
        weight = {t.lower(): w for t, w in idf.items()}
        usable = [t for t in dict.fromkeys(t.lower() for t in tokens if len(t) >= 3) if t in weight]
        if not usable or fts.MATCH_BUDGET <= 0:
            return []
        table = f"fts_{collection}"
        query = "body : (" + " OR ".join(_quoted(t) for t in usable) + ")"
        verbatim = {f"v{i}": t for i, t in enumerate(usable)}
        body = _BODY.get(collection, f"(SELECT body FROM {table} WHERE rowid = d.id)")
        held = " OR ".join(f"instr(lower({body}), :{key}) > 0" for key in verbatim)
        rows = self._match(conn, table, collection, query, limit, where, "1.0, 0.0", newest=fts.MATCH_BUDGET,
                           verbatim=(f" AND ({held})", verbatim),
                           measured=f", {body}, (SELECT sz FROM {table}_docsize WHERE id = d.id)")
        if not rows:
            return []
        total, words = _averages(conn, table)
        average = words / (total or 1)
        scored = []
        for record_id, _, text_, size in rows:
            folded, length = text_.lower(), _varints(size)[0]
            score = sum(bm25_term(folded.count(t), length, average, weight[t]) for t in usable if t in folded)
            scored.append(LexicalMatch(record_id, score))
        return sorted(scored, key=lambda m: -m.score)[:limit]

    def _counts(self, conn: Connection, collection: str, words: Sequence[str], cap: int) -> dict[str, int]:
        """Every word's count in one statement (a round trip per word cost more than the counting)."""
        if not words:
            return {}
        table = f"fts_{collection}"
        each = ", ".join(f"(SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH :q{i} LIMIT :cap))"
                         for i in range(len(words)))
        values = {"cap": cap, **{f"q{i}": _quoted(w) for i, w in enumerate(words)}}
        row = conn.execute(text(f"SELECT {each}"), values).one()
        return {word: int(count or 0) for word, count in zip(words, row, strict=True)}

    @staticmethod
    def _match(conn: Connection, table: str, collection: str, query: str, limit: int,
               where: Filter | None, column_weights: str = "1.0", newest: int = 0,
               verbatim: tuple[str, dict[str, str]] = ("", {}), measured: str = "",
               rescore: Callable[[Sequence[Any]], list[tuple[int, float]]] | None = None) -> list[Any]:
        """The best ``limit`` matches that pass ``where`` (the access rule among it): rows of record
        id and FTS5 rank (lower is better). FTS5 scores and picks the best SHORTLIST x limit first;
        those are joined to their rows and filtered a few at a time, best first, until ``limit`` pass
        (joining and filtering cost as much as the scoring). When too few of them pass, every match is
        (the limit is still filled). ``newest``: only the newest that many matches are scored (FTS5 walks
        a doclist by rowid from its end, so this bounds the work however common the terms are; the
        scoring happens in that same walk). ``verbatim``: one more condition on the joined rows (``d`` the
        lexical_docs entry), with its parameters. ``measured``: more columns, for a ranking of the
        caller's own, which then gets every row of the shortlist that passes, not only ``limit``.
        ``rescore``: ranks the shortlist (rowid, rank) again before it is joined, as (rowid, new rank)."""
        if not query:
            return []
        conditions, params = filter_sql(collection, where, "sqlite")
        conditions += verbatim[0]
        values = {**params, **verbatim[1], "query": query, "newest": newest}
        scored = (f"SELECT rowid AS rid, bm25({table}, {column_weights}) AS rank FROM {table} "
                  f"WHERE {table} MATCH :query")
        if newest:
            scored = f"SELECT rid, rank FROM ({scored} ORDER BY rowid DESC LIMIT :newest)"
        best = conn.execute(text(f"{scored} ORDER BY rank LIMIT :shortlist"),
                            {**values, "shortlist": SHORTLIST * limit}).all()
        full = len(best) == SHORTLIST * limit
        best = rescore(best) if rescore else best
        place = {rid: n for n, (rid, _) in enumerate(best)}  # ties keep FTS5's order, as one sorted query did
        joined = text(f"SELECT d.record_id, d.id{measured} FROM lexical_docs d CROSS JOIN {_JOINS[collection][0]} "
                      f"WHERE d.id IN :ids{conditions}").bindparams(bindparam("ids", expanding=True))
        rows: list[Any] = []
        for part in ((best,) if measured else (best[:2 * limit], best[2 * limit:])):
            if part:
                rows += conn.execute(joined, {**values, "ids": [rid for rid, _ in part]}).all()
            if len(rows) >= limit:
                break
        if len(rows) < limit and full:
            rows = conn.execute(text(
                f"SELECT d.record_id, s.rank{measured}, s.rid FROM ({scored}) AS s JOIN lexical_docs d "
                f"ON d.id = s.rid JOIN {_JOINS[collection][0]} WHERE 1 = 1{conditions} ORDER BY s.rank LIMIT :limit"),
                {**values, "limit": SHORTLIST * limit if measured or rescore else limit}).all()
            if rescore:
                record = {row[-1]: row[0] for row in rows}
                return [(record[rid], rank) for rid, rank in rescore([(row[-1], row[1]) for row in rows])][:limit]
            return [row[:-1] for row in rows]
        ordered = [(record_id, best[place[rid]][1], *more)
                   for record_id, rid, *more in sorted(rows, key=lambda row: place[row[1]])]
        return ordered if measured else ordered[:limit]


def _averages(conn: Connection, table: str) -> tuple[int, int]:
    """FTS5's own totals (its averages record): the records indexed and the tokens of their ``body``."""
    block = conn.execute(text(f"SELECT block FROM {table}_data WHERE id = 1")).scalar()
    counts = _varints(block or b"")
    return (counts[0], counts[1]) if len(counts) > 1 else (0, 0)


def _varints(block: bytes) -> list[int]:
    """The integers of an FTS5 record (SQLite's varints: 7 bits a byte, high bit set while more follow;
    a ninth byte gives all 8 of its bits)."""
    values, i = [], 0
    while i < len(block):
        value = 0
        for n in range(9):
            byte = block[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values
