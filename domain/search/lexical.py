"""Query analysis for the lexical signals: the words worth matching, and code-like exact tokens.

Backends stem and rank; this module only decides which terms a query asks for, the same way for
every backend, so SQLite and PostgreSQL rank the same words, and how much each weighs: one idf over
every collection a search asks (``shared_idf``), so that word scores compare across collections.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_TERMS = 32
MAX_EXACT = 8

# English function words: they match nearly every document and only slow the index down.
# (The classic van Rijsbergen / NLTK list, lower-cased, apostrophes dropped.)
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves s t d ll m o re ve y don didn doesn hadn hasn haven isn
wasn weren won wouldn shouldn couldn mustn ain aren shan mightn needn
""".split())

_WORD = re.compile(r"\w+", re.UNICODE)
# Identifiers, paths, dotted names, error codes: a token with inner punctuation, camelCase or
# letters mixed with digits.
_CANDIDATE = re.compile(r"[\w][\w./\\:#@$-]*[\w]")
_CAMEL = re.compile(r"[a-z][A-Z]")
_LETTER_DIGIT = re.compile(r"(?=.*[A-Za-z])(?=.*\d)")


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    """What the lexical signals search for: words (stemmed by the backend) and exact tokens."""

    words: tuple[str, ...]
    exact: tuple[str, ...]


def analyse(query: str) -> LexicalQuery:
    """Lower-cased content words in query order (no stopwords, no repeats) and code-like tokens."""
    words: list[str] = []
    for raw in _WORD.findall(query.lower()):
        word = raw.strip("_")
        if word and word not in STOPWORDS and word not in words:
            words.append(word)
    if not words:  # a query made only of function words still deserves an answer
        words = list(dict.fromkeys(w for w in _WORD.findall(query.lower()) if w.strip("_")))
    return LexicalQuery(tuple(words[:MAX_TERMS]), exact_tokens(query))


def exact_tokens(query: str) -> tuple[str, ...]:
    """Tokens that only an exact (substring) match finds: ``get_user_by_id``, ``src/app.py``, ``E1234``."""
    found: list[str] = []
    for token in _CANDIDATE.findall(query):
        token = token.rstrip(".:")
        if len(token) < 3 or token in found:
            continue
        inner = token[1:-1]
        if (any(c in inner for c in "_./\\:#@$-") or _CAMEL.search(token)
                or _LETTER_DIGIT.match(token)):
            found.append(token)
    return tuple(found[:MAX_EXACT])


@dataclass(frozen=True, slots=True)
class LexicalStats:
    """What one collection's word index holds of a query's terms: its records, and how many of them
    hold each word (as a word search finds it) and each exact token (as an exact search finds it)."""

    records: int
    words: Mapping[str, int]
    tokens: Mapping[str, int] = field(default_factory=dict)


def idf(records: int, holders: int) -> float:
    """Lucene's BM25 idf, ``log(1 + (N - n + 0.5) / (n + 0.5))``: the rarer the term the more it weighs,
    and never zero or negative (FTS5's ``log((N - n + 0.5) / (n + 0.5))`` is, for a term in half the
    records: in a store of two, a word held by one of them weighed nothing)."""
    held = min(max(holders, 0), max(records, 0))
    return math.log(1.0 + (max(records, 0) - held + 0.5) / (held + 0.5))


def shared_idf(stats: Iterable[LexicalStats], terms: Sequence[str], exact: bool = False) -> dict[str, float]:
    """One idf per term over every collection a search asks (N and n summed over them): a word's score
    is then on one scale in memories, turns and document chunks, so their matches rank together."""
    records, held = 0, dict.fromkeys(terms, 0)
    for one in stats:
        records += one.records
        counts = one.tokens if exact else one.words
        for term in held:
            held[term] += counts.get(term, 0)
    return {term: idf(records, n) for term, n in held.items()}


def telling(stats: Iterable[LexicalStats], words: Sequence[str]) -> set[str]:
    """The words that tell records apart: held by at most half the records searched, or by one record.

    Beside the vectors, a word most records hold is no evidence on its own (its matches would take ranks,
    and fused credit, by length alone: "user" in most memories put the shortest first); a word a single
    record holds always is, even in a store of one."""
    listed = list(stats)
    records = sum(one.records for one in listed)
    held = {w: sum(one.words.get(w, 0) for one in listed) for w in words}
    return {w for w, n in held.items() if 0 < n and (2 * n <= records or n == 1)}


def saturated(tf: float, length: float, average: float, k1: float = 1.2, b: float = 0.75) -> float:
    """BM25's term-frequency part: ``tf`` occurrences in a record of ``length`` tokens (``average``
    across its collection: each collection normalises lengths by its own)."""
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / (average or 1.0)))


def bm25_term(tf: float, length: float, average: float, weight: float, k1: float = 1.2, b: float = 0.75) -> float:
    """One term's Okapi BM25 score in one record: its ``weight`` (an ``idf``) times its saturated term frequency."""
    return weight * saturated(tf, length, average, k1, b)
