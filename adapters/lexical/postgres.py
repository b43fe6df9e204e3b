"""PostgreSQL full text for the lexical index: a tsvector (English stemming) with a GIN index, and
pg_trgm for exact tokens.

PostgreSQL's ts_rank knows nothing of how rare a word is (spec 004 Part 2), so each query word's
rank is weighted by the idf it is given (Lucene's, over every collection the search asks, from the
holders each collection counts through its GIN index: ``stats``) with ts_rank's length-normalised
term frequency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from adapters.lexical import fts
from adapters.lexical.fts import _JOINS, Doc, LexicalBackend, filter_sql
from domain.model import LexicalMatch
from domain.ports import Filter
from domain.search.lexical import LexicalStats

CONFIG = "english"
K1 = 1.2  # BM25's term-frequency saturation, as FTS5's


class PostgresFullText(LexicalBackend):
    def create(self, conn: Connection) -> None:
        conn.execute(text("ALTER TABLE lexical_docs ADD COLUMN IF NOT EXISTS body text"))
        conn.execute(text("ALTER TABLE lexical_docs ADD COLUMN IF NOT EXISTS tsv tsvector"))
        conn.execute(text("CREATE INDEX IF NOT EXISTS ix_lexical_docs_tsv ON lexical_docs USING gin (tsv)"))
        try:  # pg_trgm may be missing or not ours to create: exact search then scans, still correct
            with conn.begin_nested():
                conn.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
                conn.execute(text("CREATE INDEX IF NOT EXISTS ix_lexical_docs_trgm ON lexical_docs "
                                  "USING gin (lower(body) gin_trgm_ops)"))
        except Exception:  # noqa: BLE001 - the savepoint was rolled back
            pass

    def reset(self, conn: Connection) -> None:
        """The columns stay; the rebuild that follows rewrites every row."""

    def _add(self, conn: Connection, collection: str, rows: list[tuple[int, Doc]]) -> None:
        # Own words weigh A, the neighbours' words (a turn's context) B: ranked with the context weight.
        conn.execute(text(f"UPDATE lexical_docs SET body = :body, tsv = setweight(to_tsvector('{CONFIG}', :body), 'A')"
                          f" || setweight(to_tsvector('{CONFIG}', :context), 'B') WHERE id = :id"),
                     [{"id": i, "body": d.body, "context": d.context} for i, d in rows])

    def _drop(self, conn: Connection, collection: str, ids: Sequence[int]) -> None:
        """The text lives in the lexical_docs rows the caller deletes."""

    def _clear(self, conn: Connection) -> None:
        """As for _drop."""

    def search(self, conn: Connection, collection: str, words: Sequence[str], limit: int,
               where: Filter | None, context_weight: float, idf: Mapping[str, float]) -> list[LexicalMatch]:
        words = [w for w in words if w in idf]  # a word the search gives no weight is not matched
        if not words:
            return []
        kept = self.selective(conn, collection, words)
        if kept:
            return self._scored(conn, collection, list(kept), " OR ", 0, limit, where, context_weight, idf)
        if fts.MATCH_BUDGET <= 0:
            return []
        params = {f"t{i}": w for i, w in enumerate(words)}
        for joiner in (" AND ", " OR "):  # every word is common: the newest records holding them all, else any
            matched = joiner.join(self._query(f":{k}", context_weight, "d.tsv") for k in params)
            floor = _newest_from(conn, collection, matched, params, fts.MATCH_BUDGET) or 0
            found = self._scored(conn, collection, list(words), joiner, floor, limit, where, context_weight, idf)
            if found:
                return found
        return []

    def _scored(self, conn: Connection, collection: str, words: list[str], joiner: str, floor: int,
                limit: int, where: Filter | None, context_weight: float, idf: Mapping[str, float]
                ) -> list[LexicalMatch]:
        """The best ``limit`` records holding the words (``joiner``), from id ``floor`` on, by ts_rank (its
        term frequency normalised by the record's length) weighted by each word's ``idf``."""
        terms = {f"t{i}": w for i, w in enumerate(words) if w in idf}
        if not terms:
            return []
        any_word = joiner.join(self._query(f":{k}", context_weight, "d.tsv") for k in terms)
        grades = f"'{{0, 0, {max(0.0, float(context_weight))}, 1}}'"  # D, C, B (context), A (own words)
        score = " + ".join(f":w{k} * ts_rank({grades}, d.tsv, plainto_tsquery('{CONFIG}', :{k}), 1)"
                           for k in terms)
        conditions, params = filter_sql(collection, where, "postgresql")
        rows = conn.execute(text(
            f"SELECT d.record_id, {score} AS score FROM lexical_docs d JOIN {_JOINS[collection][0]} "
            f"WHERE d.collection = :c AND ({any_word}) AND d.id >= :floor{conditions} "
            "ORDER BY score DESC, d.record_id LIMIT :limit"),
            {**params, **terms, **{f"w{k}": float(idf[w]) for k, w in terms.items()},
             "c": collection, "limit": limit, "floor": floor}).all()
        return [LexicalMatch(record_id, float(value)) for record_id, value in rows if value > 0]

    def stats(self, conn: Connection, collection: str, words: Sequence[str],
              tokens: Sequence[str] = ()) -> LexicalStats:
        """One statement: the collection's entries, each word's holders through the GIN index (its own or a
        turn's neighbours' words, as a search finds them), each token's through the trigram index."""
        held = [f"(SELECT count(*) FROM (SELECT 1 FROM lexical_docs WHERE collection = :c AND tsv @@ "
                f"plainto_tsquery('{CONFIG}', :w{i}) LIMIT :cap) AS w{i})" for i in range(len(words))]
        held += [f"(SELECT count(*) FROM (SELECT 1 FROM lexical_docs WHERE collection = :c AND lower(body) LIKE :x{i} "
                 f"ESCAPE '\\' LIMIT :cap) AS x{i})" for i in range(len(tokens))]
        row = conn.execute(text("SELECT (SELECT count(*) FROM lexical_docs WHERE collection = :c)"
                                + "".join(f", {h}" for h in held)),
                           {"c": collection, "cap": fts.MATCH_BUDGET + 1, **{f"w{i}": w for i, w in enumerate(words)},
                            **{f"x{i}": "%" + _like_escaped(t.lower()) + "%" for i, t in enumerate(tokens)}}).one()
        counts = [int(n or 0) for n in row[1:]]
        return LexicalStats(int(row[0] or 0), dict(zip(words, counts[:len(words)], strict=True)),
                            dict(zip(tokens, counts[len(words):], strict=True)))

    def _count(self, conn: Connection, collection: str, word: str, cap: int) -> int:
        return int(conn.execute(text(
            f"SELECT count(*) FROM (SELECT 1 FROM lexical_docs WHERE collection = :c "
            f"AND tsv @@ plainto_tsquery('{CONFIG}', :w) LIMIT :cap) AS found"),
            {"c": collection, "w": word, "cap": cap}).scalar() or 0)

    @staticmethod
    def _query(param: str, context_weight: float, column: str = "tsv") -> str:
        """Where a word matches; only in the record's own words (weight A) when context counts nothing."""
        query = f"plainto_tsquery('{CONFIG}', {param})"
        if context_weight > 0:
            return f"{column} @@ {query}"
        return f"{column} @@ {query} AND ts_rank('{{0, 0, 0, 1}}', {column}, {query}) > 0"

    def exact(self, conn: Connection, collection: str, tokens: Sequence[str], limit: int,
              where: Filter | None, idf: Mapping[str, float]) -> list[LexicalMatch]:
        """By BM25 of each token's occurrences in the record's text, each token weighing its ``idf``
        (without length normalisation: PostgreSQL keeps no average length to compare with)."""
        weight = {t.lower(): w for t, w in idf.items()}
        lowered = [t for t in dict.fromkeys(t.lower() for t in tokens if len(t) >= 3) if t in weight]
        usable = {f"x{i}": "%" + _like_escaped(t) + "%" for i, t in enumerate(lowered)}
        if not usable or fts.MATCH_BUDGET <= 0:
            return []
        # How often the record holds each token (what its length loses when they are taken out), saturated.
        held = [f"((length(lower(d.body)) - length(replace(lower(d.body), :t{i}, ''))) / length(CAST(:t{i} AS text)))"
                for i in range(len(lowered))]
        matched = " + ".join(f":w{i} * {tf} * {K1 + 1} / ({tf} + {K1})" for i, tf in enumerate(held))
        any_token = " OR ".join(f"lower(d.body) LIKE :{k} ESCAPE '\\'" for k in usable)
        # A token that common is looked for in the newest MATCH_BUDGET records holding it, as SQLite does.
        floor = _newest_from(conn, collection, any_token, usable, fts.MATCH_BUDGET) or 0
        conditions, params = filter_sql(collection, where, "postgresql")
        rows = conn.execute(text(
            f"SELECT d.record_id, {matched} AS score FROM lexical_docs d JOIN {_JOINS[collection][0]} "
            f"WHERE d.collection = :c AND ({any_token}) AND d.id >= :floor{conditions} "
            "ORDER BY score DESC, d.record_id LIMIT :limit"),
            {**params, **usable, **{f"t{i}": t for i, t in enumerate(lowered)},
             **{f"w{i}": float(weight[t]) for i, t in enumerate(lowered)}, "c": collection, "limit": limit,
             "floor": floor}).all()
        return [LexicalMatch(record_id, float(value)) for record_id, value in rows]


def _newest_from(conn: Connection, collection: str, condition: str, params: dict[str, str],
                 count: int) -> int | None:
    """The id from which the newest ``count`` entries meeting ``condition`` (on ``d``) start; None when
    fewer do."""
    found = conn.execute(text(f"SELECT d.id FROM lexical_docs d WHERE d.collection = :c AND ({condition}) "
                              "ORDER BY d.id DESC LIMIT 1 OFFSET :n"),
                         {**params, "c": collection, "n": count - 1}).scalar()
    return None if found is None else int(found)


def _like_escaped(token: str) -> str:
    return token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
