"""Passages of one document, ranked: the second look's scoring (domain/search/second_look.py uses it).

A passage is a run of adjacent chunks grown from one chunk (its anchor): by the neighbour (before or
after) the chunk scores rank higher, while that neighbour holds the query's words (a query word the
passage lacks, or at least ``Look.grow`` of the anchor's word score) and the passage stays within
``Look.cap`` characters. A chunk scores, each evidence scaled to the document's range (0 the document's
least, 1 its most) so that none swamps the others:

- the query's words in it (BM25 over the document's chunks, each word weighing the search's idf);
- the search's own fused score for it (0 for a chunk the search did not retrieve);
- the words of its heading path (``heading_path`` from the structure chunkers), by their idf.

A passage scores its best chunk plus ``Look.mean`` times its chunks' mean. The best passage is taken
first, then the best of the chunks left, so no chunk is in two; adjacent chunks may share text (token
windows overlap), which the lesser of two passages that meet gives up (``apart``).
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from domain.model import ArtifactChunk
from domain.search.lexical import saturated
from domain.search.snippets import root

_MIN_ROOT = 3  # as snippets' stem-prefix match: a shorter root matches only itself
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Look:
    """How the second look weighs its evidence (chosen on the passages bench's dev split: README)."""

    cap: int = 1_500  # a passage's most characters (one chunk longer than that is a passage alone)
    grow: float = 0.25  # a neighbour joins when its word score is at least this share of the anchor's
    words: float = 1.0  # the query's words in the chunk
    evidence: float = 0.5  # the search's fused score for it
    heading: float = 0.3  # its heading path's words
    mean: float = 0.3  # a passage: its best chunk's score plus this share of its chunks' mean
    b: float = 0.75  # BM25's length normalisation of a chunk against the document's
    reach: int = 8  # chunks read before the first and after the last chunk the search retrieved (0: all)


@dataclass(frozen=True, slots=True)
class Span:
    """Chunks ``first..last`` (positions in the document's chunk list) as one passage."""

    first: int
    last: int
    start: int  # start_char in the artifact
    end: int  # end_char in the artifact
    score: float
    anchor: int  # the chunk it grew from (its best)


def assembled(chunks: Sequence[ArtifactChunk]) -> str:
    """The artifact's text from the first chunk's start to the last one's end, from adjacent chunks in
    order (each adds its text past the end of the ones before it)."""
    if not chunks:
        return ""
    parts, end = [chunks[0].content], chunks[0].end_char
    for chunk in chunks[1:]:
        if chunk.end_char > end:
            parts.append(chunk.content[max(0, end - chunk.start_char):])
            end = chunk.end_char
    return "".join(parts)


@functools.lru_cache(maxsize=8192)
def vocabulary(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A text's lower-cased words, sorted, and how often each occurs. (Cached: a document's chunks are
    read again by every search that finds it; a word's matches are then a bisection away.)"""
    counts = Counter(_WORD.findall(text.lower()))
    words = tuple(sorted(counts))
    return words, tuple(counts[w] for w in words)


def word_counter(words: Sequence[str]) -> Callable[[str], Counter[int]]:
    """Occurrences of each query word (by position) in a text: a text word matches the first query word
    whose root (snippets' ``root``) starts it, or, for a root under three letters, is that root; case aside."""
    roots = list(dict.fromkeys(root(w) for w in words))
    first = {r: i for i, r in reversed(list(enumerate(root(w) for w in words)))}

    def counted(text: str) -> Counter[int]:
        vocab, counts = vocabulary(text)
        found: dict[int, int] = {}  # text word (by position in vocab) -> the query word it matches
        for r in roots:
            lo = bisect_left(vocab, r)
            hi = bisect_right(vocab, r) if len(r) < _MIN_ROOT else bisect_left(vocab, r + "\U0010ffff", lo)
            for k in range(lo, hi):
                found.setdefault(k, first[r])  # roots come in query order: the first one to match keeps it
        tally: Counter[int] = Counter()
        for k, i in found.items():
            tally[i] += counts[k]
        return tally

    return counted


def scaled(values: Sequence[float]) -> list[float]:
    """Each value's place between the least (0) and the most (1); all 0 when they are all equal."""
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def passages(chunks: Sequence[ArtifactChunk], words: Sequence[str], idf: Mapping[str, float],
             evidence: Mapping[str, float], count: int, look: Look = Look()) -> list[Span]:
    """Up to ``count`` passages of one document, best first, none overlapping another.

    ``chunks``: the document's chunks in order; ``words``: the query's words (``idf`` weighs each, a
    word it lacks weighs 1); ``evidence``: the search's fused score of each chunk it retrieved (by id).
    """
    if not chunks or count < 1:
        return []
    counted = word_counter(words)
    weight = [float(idf.get(w, 1.0)) for w in words]
    # A chunk its chunker keeps out of the indexes (an email's quoted history) is in no passage.
    free = [c.metadata.get("indexed", True) is not False for c in chunks]
    counts = [counted(c.content) if free[i] else Counter() for i, c in enumerate(chunks)]
    lengths = [len(c.content) for c in chunks]  # in characters: BM25 compares the document's chunks only
    average = sum(lengths) / len(lengths) or 1.0
    own = [sum(weight[i] * saturated(tf, n, average, b=look.b) for i, tf in held.items())
           for held, n in zip(counts, lengths)]
    paths = {path: sum(weight[i] for i in set(counted(path)))
             for path in {" ".join(map(str, c.metadata.get("heading_path") or [])) for c in chunks}}
    headed = [paths[" ".join(map(str, c.metadata.get("heading_path") or []))] for c in chunks]
    parts = [(look.words, own), (look.evidence, [evidence.get(c.id, 0.0) for c in chunks]),
             (look.heading, [h if f else 0.0 for h, f in zip(headed, free)])]
    columns = [(w, scaled(values)) for w, values in parts]
    score = [sum(w * column[i] for w, column in columns) for i in range(len(chunks))]
    taken: list[Span] = []
    grown: dict[int, tuple[int, int, int]] = {}  # anchor -> its run (grown again when a taken passage cut it)
    while len(taken) < count and any(free):
        for i in range(len(chunks)):
            if free[i] and i not in grown:
                grown[i] = _grown(chunks, counts, own, score, free, i, look)
        best = max(set(grown.values()), key=lambda run: (_scored(score, run, look), -run[0], -run[1]))
        first, last, anchor = best
        grown = {i: run for i, run in grown.items() if run[1] < first or run[0] > last}
        taken.append(Span(first, last, chunks[first].start_char, max(c.end_char for c in chunks[first:last + 1]),
                          round(_scored(score, best, look), 6), anchor))
        free[first:last + 1] = [False] * (last - first + 1)
    return apart(taken)


def _scored(score: Sequence[float], run: tuple[int, int, int], look: Look) -> float:
    inside = score[run[0]:run[1] + 1]
    return max(inside) + look.mean * sum(inside) / len(inside)


def _grown(chunks: Sequence[ArtifactChunk], counts: Sequence[Counter[int]], own: Sequence[float],
           score: Sequence[float], free: Sequence[bool], anchor: int, look: Look) -> tuple[int, int, int]:
    """The run of chunks grown from ``anchor``: by the neighbour (not in a passage taken before) with the
    better score, while it holds enough of the query's words and the passage stays within the cap."""
    first = last = anchor
    held = set(counts[anchor])
    while True:
        options = []
        for step in (first - 1, last + 1):
            if not (0 <= step < len(chunks) and free[step] and own[step] > 0):
                continue
            lo, hi = min(first, step), max(last, step)
            if max(c.end_char for c in chunks[lo:hi + 1]) - chunks[lo].start_char > look.cap:
                continue
            if set(counts[step]) - held or own[step] >= look.grow * own[anchor]:
                options.append((score[step], -step, step))
        if not options:
            return first, last, anchor
        step = max(options)[2]
        held |= set(counts[step])
        first, last = min(first, step), max(last, step)


def apart(spans: list[Span]) -> list[Span]:
    """Spans (best first, no chunk in two) whose text does not overlap either: adjacent chunks may
    share text (token windows overlap), so the lesser of two passages that meet gives up the shared part."""
    kept = list(spans)
    for rank, span in enumerate(spans):
        start, end = span.start, span.end
        for better in kept[:rank]:
            if better.last < span.first:
                start = max(start, better.end)
            elif better.first > span.last:
                end = min(end, better.start)
        kept[rank] = replace(span, start=start, end=max(start, end))
    return kept
