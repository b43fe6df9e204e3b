"""In-memory fake of the LexicalIndex port: Okapi BM25 over the fake store's current records."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from adapters.vectors.similarity import matches
from domain.model import LexicalMatch
from domain.search.lexical import bm25_term, idf as lucene_idf
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


def bm25(docs: dict[str, str], words: Sequence[str], limit: int, idf: Mapping[str, float] | None = None,
         k1: float = 1.2, b: float = 0.75) -> list[LexicalMatch]:
    """Okapi BM25, each word weighing its ``idf`` (without one: its Lucene idf among ``docs``)."""
    bags = {key: Counter(terms(text)) for key, text in docs.items()}
    if not bags:
        return []
    average = sum(sum(bag.values()) for bag in bags.values()) / len(bags) or 1.0
    weights = _weights(bags.values(), words, idf)
    scored: list[LexicalMatch] = []
    for key, bag in bags.items():
        length = sum(bag.values())
        score = sum(bm25_term(tf, length, average, weight, k1, b)
                    for word, weight in weights.items() if (tf := bag.get(word, 0)))
        if score > 0:
            scored.append(LexicalMatch(key, score))
    return sorted(scored, key=lambda m: (-m.score, m.record_id))[:limit]


def _weights(bags: Iterable[Counter[str]], words: Sequence[str], idf: Mapping[str, float] | None) -> dict[str, float]:
    """Each stemmed query word's weight: its given idf (a word not given is not matched), else its Lucene
    idf among the bags."""
    listed = list(bags)
    weights: dict[str, float] = {}
    for word in words:
        key = stem(word.lower())
        if key in weights or (idf is not None and word not in idf):
            continue
        weights[key] = idf[word] if idf is not None else lucene_idf(len(listed), sum(1 for bag in listed if key in bag))
    return weights


def bm25_with_context(docs: dict[str, tuple[str, str]], words: Sequence[str], limit: int,
                      context_weight: float, idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
    """BM25 of a record's own text plus ``context_weight`` times BM25 of its context, each word weighing its
    ``idf`` (without one: its Lucene idf among the records holding it in either)."""
    if idf is None:
        idf = {w: lucene_idf(len(docs), n) for w, n in holders(docs, words).items()}
    own = {m.record_id: m.score for m in bm25({k: body for k, (body, _) in docs.items()}, words, len(docs), idf)}
    around = {m.record_id: m.score for m in bm25({k: ctx for k, (_, ctx) in docs.items()}, words, len(docs), idf)}
    scored = [LexicalMatch(k, own.get(k, 0.0) + context_weight * around.get(k, 0.0)) for k in set(own) | set(around)]
    scored = [m for m in scored if m.score > 0]
    return sorted(scored, key=lambda m: (-m.score, m.record_id))[:limit]


def holders(docs: dict[str, tuple[str, str]], words: Sequence[str]) -> dict[str, int]:
    """For each word, the records holding it (stemmed) in their own text or their context (as a search finds them)."""
    bags = [set(terms(body)) | set(terms(around)) for body, around in docs.values()]
    return {w: sum(1 for bag in bags if stem(w.lower()) in bag) for w in words}


def substrings(docs: dict[str, str], tokens: Sequence[str], limit: int,
               idf: Mapping[str, float] | None = None) -> list[LexicalMatch]:
    """BM25 of the tokens' verbatim (case-folded) occurrences, each token weighing its ``idf`` (without one:
    its Lucene idf among ``docs``); a record's length in words."""
    usable = list(dict.fromkeys(t for t in tokens if len(t) >= 3))
    folded = {key: text.lower() for key, text in docs.items()}
    if not usable or not folded:
        return []
    lengths = {key: len(terms(text)) for key, text in folded.items()}
    average = sum(lengths.values()) / len(lengths) or 1.0
    weights = {t: idf[t] if idf is not None else lucene_idf(len(folded), sum(1 for text in folded.values()
                                                                            if t.lower() in text))
               for t in usable if idf is None or t in idf}
    usable = list(weights)
    scored = [LexicalMatch(key, sum(bm25_term(text.count(t.lower()), lengths[key], average, weights[t])
                                    for t in usable if t.lower() in text)) for key, text in folded.items()]
    return sorted((m for m in scored if m.score > 0), key=lambda m: (-m.score, m.record_id))[:limit]


def filtered(records: Iterable[tuple[str, str, dict[str, Any]]], where: Filter | None) -> dict[str, str]:
    """id -> text of the records whose fields pass a vector-index-style filter."""
    return {key: text for key, text, fields in records if matches(fields, where)}
