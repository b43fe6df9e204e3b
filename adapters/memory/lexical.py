"""In-memory fake of the LexicalIndex port: Okapi BM25 over the fake store's current records."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from adapters.vectors.similarity import matches
from domain.model import LexicalMatch
from domain.search.lexical import bm25_term
from domain.ports import Filter

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "s")


def stem(word: str) -> str:
    """A crude suffix stripper: enough for a fake to match ``shoes`` with ``shoe``."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower())]


def bm25(docs: dict[str, str], words: Sequence[str], limit: int, k1: float = 1.2, b: float = 0.75
         ) -> list[LexicalMatch]:
    bags = {key: Counter(terms(text)) for key, text in docs.items()}
    if not bags:
        return []
    average = sum(sum(bag.values()) for bag in bags.values()) / len(bags) or 1.0
    wanted = list(dict.fromkeys(stem(w.lower()) for w in words))
    frequency = {w: sum(1 for bag in bags.values() if w in bag) for w in wanted}
    scored: list[LexicalMatch] = []
    for key, bag in bags.items():
        length = sum(bag.values())
        score = 0.0
        for word in wanted:
            if tf := bag.get(word, 0):
                score += bm25_term(tf, length, average, frequency[word], len(bags), k1, b)
        if score > 0:
            scored.append(LexicalMatch(key, score))
    return sorted(scored, key=lambda m: (-m.score, m.record_id))[:limit]


def bm25_with_context(docs: dict[str, tuple[str, str]], words: Sequence[str], limit: int,
                      context_weight: float) -> list[LexicalMatch]:
    """BM25 of a record's own text plus ``context_weight`` times BM25 of its context."""
    own = {m.record_id: m.score for m in bm25({k: body for k, (body, _) in docs.items()}, words, len(docs))}
    around = {m.record_id: m.score for m in bm25({k: ctx for k, (_, ctx) in docs.items()}, words, len(docs))}
    scored = [LexicalMatch(k, own.get(k, 0.0) + context_weight * around.get(k, 0.0)) for k in set(own) | set(around)]
    scored = [m for m in scored if m.score > 0]
    return sorted(scored, key=lambda m: (-m.score, m.record_id))[:limit]


def substrings(docs: dict[str, str], tokens: Sequence[str], limit: int) -> list[LexicalMatch]:
    usable = [t.lower() for t in tokens if len(t) >= 3]
    scored = [LexicalMatch(key, float(sum(text.lower().count(t) for t in usable))) for key, text in docs.items()]
    return sorted((m for m in scored if m.score > 0), key=lambda m: (-m.score, m.record_id))[:limit]


def filtered(records: Iterable[tuple[str, str, dict[str, Any]]], where: Filter | None) -> dict[str, str]:
    """id -> text of the records whose fields pass a vector-index-style filter."""
    return {key: text for key, text, fields in records if matches(fields, where)}
