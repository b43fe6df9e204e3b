"""Snippets: the part of a hit's text around the best match of the query's words, cut between words.

A snippet is a substring of the text, at most ``width`` characters long, with an ellipsis wherever
text was left out. It starts and ends between words (between whitespace-separated tokens when it
can), at a sentence boundary when one is near. Query words match text words case-insensitively by a
crude stem prefix ("sorting" finds "sorted", "allergies" finds "allergic"): near enough to the porter
stemming of the lexical index to show the words that made a hit match.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence

WIDTH = 240
ELLIPSIS = "…"

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[\w)\]\"'*`])[.!?](?=\s)|\n[ \t]*\n")
_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "ness", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")
_UNDOUBLE = ("ings", "ing", "ers", "er", "ed")
_MIN_ROOT = 3


@functools.lru_cache(maxsize=1 << 16)
def root(word: str) -> str:
    """A lower-cased word without its commonest English suffix: what the stem-prefix match compares.
    (Cached: a search stems the same words of every hit's text again and again.)"""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_ROOT:
            word = word[: -len(suffix)]
            if suffix in _UNDOUBLE and len(word) > _MIN_ROOT and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, stopped -> stop
            break
    if word.endswith("y") and len(word) > _MIN_ROOT:
        word = word[:-1]  # happy -> happ (happiness), family -> famil (families)
    return word


class QueryWords:
    """Which query word (by position) a text word matches: its lower-cased form starts with the
    word's root, or, for a root shorter than ``_MIN_ROOT``, is that root. (A word's own root is a
    prefix of it, so this is the stem-prefix match of ``root``.) Most text words match none: one
    ``startswith`` over every long root tells so."""

    def __init__(self, words: Sequence[str]) -> None:
        roots = [root(w) for w in words]
        self._long = [(i, r) for i, r in enumerate(roots) if len(r) >= _MIN_ROOT]
        self._prefixes = tuple(r for _, r in self._long)
        self._short: dict[str, int] = {}
        for i, r in enumerate(roots):
            if len(r) < _MIN_ROOT:
                self._short.setdefault(r, i)

    def __call__(self, token: str) -> int | None:
        word = token.lower()
        found = self._short.get(word)
        if word.startswith(self._prefixes):
            first = next(i for i, r in self._long if word.startswith(r))
            found = first if found is None else min(found, first)
        return found


def span(text: str, words: Sequence[str], width: int = WIDTH, open_start: bool = False,
         open_end: bool = False) -> tuple[int, int]:
    """Where the snippet of ``text`` for the query ``words`` lies: ``text[start:end]``.

    ``open_start``/``open_end``: the text is an excerpt (a chunk) whose first/last word may be cut
    in two; such a word is never shown. Without a match the snippet is the text's beginning.
    """
    lo, hi = _region(text, open_start, open_end)
    tokens = [(m.start(), m.end()) for m in _WORD.finditer(text, lo, hi)]
    if not tokens:
        return lo, lo
    matched = QueryWords(words)
    seen: dict[str, int | None] = {}  # a text repeats its words: each is matched once
    found: list[tuple[int, int, int]] = []
    for s, e in tokens:
        word = text[s:e]
        q = seen[word] if word in seen else seen.setdefault(word, matched(word))
        if q is not None:
            found.append((s, e, q))
    if found:
        first, last = _cluster(found, width)
        start = _start(text, lo, first, last, width)
    else:
        start, last = _skip_space(text, lo, tokens[0][0]), tokens[0][1]
    if last - start > width:  # a word longer than the snippet: cut it, the ellipses show where
        return start, start + width
    return start, _end(text, start, last, hi, width)


def snippet(text: str, words: Sequence[str], width: int = WIDTH, open_start: bool = False,
            open_end: bool = False) -> str:
    """The snippet of ``text`` for the query ``words``, with an ellipsis wherever text was left out."""
    start, end = span(text, words, width, open_start, open_end)
    return cut(text, start, end, open_start, open_end)


def cut(text: str, start: int, end: int, open_start: bool = False, open_end: bool = False) -> str:
    """``text[start:end]``, with an ellipsis where text was left out (or the text itself is an excerpt)."""
    before = ELLIPSIS if start > 0 or open_start else ""
    after = ELLIPSIS if end < len(text) or open_end else ""
    return before + text[start:end] + after


def _region(text: str, open_start: bool, open_end: bool) -> tuple[int, int]:
    """The part of ``text`` that holds only whole words (a word cut at an open end is left out)."""
    lo, hi = 0, len(text)
    if open_start:  # from the first whitespace on
        while lo < hi and not text[lo].isspace():
            lo += 1
    if open_end:  # up to the last whitespace
        while hi > lo and not text[hi - 1].isspace():
            hi -= 1
    return _skip_space(text, lo, hi), _trim_space(text, lo, hi)


def _cluster(found: list[tuple[int, int, int]], width: int) -> tuple[int, int]:
    """The first run of matches within ``width`` holding the most distinct query words, then the most matches."""
    best, best_score = (found[0][0], found[0][1]), (0, 0)
    counts: Counter[int] = Counter()
    left = 0
    for right, (_, end, query) in enumerate(found):
        counts[query] += 1
        while left < right and end - found[left][0] > width:
            counts[found[left][2]] -= 1
            if not counts[found[left][2]]:
                del counts[found[left][2]]
            left += 1
        score = (len(counts), right - left + 1)
        if score > best_score:
            best, best_score = (found[left][0], end), score
    return best


def _start(text: str, lo: int, first: int, last: int, width: int) -> int:
    """The start of the sentence holding the match if it fits, else a little context before the match."""
    room = max(0, width - (last - first))
    earliest = max(lo, first - room)
    sentence = lo
    for m in _SENTENCE_END.finditer(text, earliest, first):
        sentence = m.end()
    if sentence >= earliest:
        return _skip_space(text, sentence, first)
    start = first - room // 3
    for i in range(start, first):  # the first whitespace-separated token, else the match itself
        if text[i - 1].isspace() and not text[i].isspace():
            return i
    return first


def _end(text: str, start: int, last: int, hi: int, width: int) -> int:
    """A sentence end in the snippet's last third if there is one, else the last whole token or word."""
    end = min(hi, start + width)
    if end == hi:
        return _trim_space(text, last, end)
    floor = max(last, start + (2 * width) // 3)
    sentence = None
    for m in _SENTENCE_END.finditer(text, floor, end):
        sentence = m.start() + 1 if text[m.start()] in ".!?" else m.start()
    if sentence is not None:
        return _trim_space(text, last, sentence)
    for i in range(end, floor, -1):  # before whitespace
        if text[i].isspace() and not text[i - 1].isspace():
            return i
    while end > last and _is_word(text[end - 1]) and _is_word(text[end]):  # between words
        end -= 1
    return _trim_space(text, last, end)


def _skip_space(text: str, start: int, limit: int) -> int:
    while start < limit and text[start].isspace():
        start += 1
    return start


def _trim_space(text: str, floor: int, end: int) -> int:
    while end > floor and text[end - 1].isspace():
        end -= 1
    return end


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"
