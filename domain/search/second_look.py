"""The second look: inside a document a search found, the passage that answers, not a fixed chunk.

Retrieval ranks chunks one by one; a document's answer often lies in a chunk that no signal put near
the top, or across two adjacent chunks. For each document among a search's results the second look
reads all of its chunks and ranks passages of it:

- a passage is a run of adjacent chunks, grown from one chunk (its anchor) by a neighbour while the
  neighbour holds the query's words (at least ``Look.grow`` of the anchor's own word score, or a
  query word the passage lacks) and the passage stays within ``Look.cap`` characters;
- it scores the query's words in its text (BM25, each word weighing the search's idf), the words of
  its heading path (chunk metadata from the structure chunkers: ``heading_path``), and the evidence
  the search's own fusion gave its chunks (each retrieved chunk's fused score), each scaled to the
  document's best so that none of the three swamps the others;
- a document's passages never overlap: the best is taken first, then the best of the rest.

The passage's text is the artifact's text from its first chunk's ``start_char`` to its last chunk's
``end_char`` (chunks may overlap or abut: each adds only its text past the one before).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from domain.model import ArtifactChunk, Hit
from domain.ports import ArtifactStore
from domain.search.lexical import LexicalStats, analyse, saturated, shared_idf
from domain.search.retrieve import Retriever
from domain.search.snippets import QueryWords

_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Look:
    """How the second look weighs its evidence (tuned on the passages bench's dev split: README)."""

    cap: int = 1_500  # a passage's most characters (one chunk longer than that is a passage alone)
    grow: float = 0.25  # a neighbour joins when its word score is at least this share of the anchor's
    heading: float = 0.3  # the heading path's words, against the passage's own words (1.0)
    evidence: float = 0.5  # the search's fused score of the passage's best chunk, against its words (1.0)
    b: float = 0.75  # BM25's length normalisation of a passage against the document's chunks


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


@dataclass(frozen=True, slots=True)
class _Read:
    counts: Counter[int]  # query word (by position) -> occurrences
    length: int  # words in the text
    heading: frozenset[int]  # query words its heading path holds


def _read(chunk: ArtifactChunk, matcher: QueryWords) -> _Read:
    tokens = _WORD.findall(chunk.content)
    counts = Counter(i for t in tokens if (i := matcher(t)) is not None)
    path = chunk.metadata.get("heading_path") or []
    heads = {i for title in path if isinstance(title, str) for t in _WORD.findall(title)
             if (i := matcher(t)) is not None}
    return _Read(counts, len(tokens), frozenset(heads))


def passages(chunks: Sequence[ArtifactChunk], words: Sequence[str], idf: Mapping[str, float],
             evidence: Mapping[str, float], count: int, look: Look = Look()) -> list[Span]:
    """Up to ``count`` passages of one document, best first, none overlapping another.

    ``chunks``: the document's chunks in order; ``words``: the query's words (``idf`` weighs each, a
    word it lacks weighs 1); ``evidence``: the search's fused score of each chunk it retrieved (by id).
    """
    if not chunks or count < 1:
        return []
    matcher = QueryWords(words)
    weight = [float(idf.get(w, 1.0)) for w in words]
    reads = [_read(c, matcher) for c in chunks]
    average = sum(r.length for r in reads) / len(reads) or 1.0

    def words_score(counts: Counter[int], length: int) -> float:
        return sum(weight[i] * saturated(tf, length, average, b=look.b) for i, tf in counts.items())

    own = [words_score(r.counts, r.length) for r in reads]

    def measured(first: int, last: int) -> tuple[float, float, float]:
        counts: Counter[int] = Counter()
        heads: set[int] = set()
        for r in reads[first:last + 1]:
            counts.update(r.counts)
            heads |= r.heading
        length = sum(r.length for r in reads[first:last + 1])
        found = max((evidence.get(c.id, 0.0) for c in chunks[first:last + 1]), default=0.0)
        return words_score(counts, length), sum(weight[i] for i in heads), found

    free = [True] * len(chunks)
    taken: list[Span] = []
    scale: list[float] = []  # each evidence's best in the document: the first round's
    while len(taken) < count and any(free):
        runs = dict.fromkeys(_grown(chunks, reads, own, free, i, look) for i in range(len(chunks)) if free[i])
        measures = {run: measured(run[0], run[1]) for run in runs}
        scale = scale or [max(m[k] for m in measures.values()) or 1.0 for k in range(3)]
        spans = [Span(first, last, chunks[first].start_char, max(c.end_char for c in chunks[first:last + 1]),
                      round(w / scale[0] + look.heading * h / scale[1] + look.evidence * e / scale[2], 6), anchor)
                 for (first, last, anchor), (w, h, e) in measures.items()]
        best = min(spans, key=lambda s: (-s.score, s.first, s.last))
        taken.append(best)
        free[best.first:best.last + 1] = [False] * (best.last - best.first + 1)
    return apart(taken)


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


def _grown(chunks: Sequence[ArtifactChunk], reads: Sequence[_Read], own: Sequence[float], free: Sequence[bool],
           anchor: int, look: Look) -> tuple[int, int, int]:
    """The run of chunks grown from ``anchor``: by the neighbour (before or after, not in a passage taken
    before) with the better word score, while it holds enough of the query's words and the passage
    stays within the cap."""
    first = last = anchor
    held = set(reads[anchor].counts)
    while True:
        options = []
        for step in (first - 1, last + 1):
            if not (0 <= step < len(chunks) and free[step]):
                continue
            lo, hi = min(first, step), max(last, step)
            if max(c.end_char for c in chunks[lo:hi + 1]) - chunks[lo].start_char > look.cap:
                continue
            new = set(reads[step].counts) - held
            if own[step] > 0 and (new or own[step] >= look.grow * own[anchor]):
                options.append((own[step], -step, step))
        if not options:
            return first, last, anchor
        step = max(options)[2]
        held |= set(reads[step].counts)
        first, last = min(first, step), max(last, step)


@dataclass(frozen=True, slots=True)
class SecondLook:
    """A search's chunk hits as passages: each document among the results keeps the places its chunks
    took, filled by its best passages (``passages``), best first; other hits stay as they are."""

    artifacts: ArtifactStore
    stats: Callable[[str, Sequence[str], Sequence[str]], LexicalStats]  # a collection's word counts
    look: Look = Look()

    def __call__(self, query: str, hits: list[Hit], collections: Sequence[str]) -> list[Hit]:
        words = analyse(query).words
        places: dict[str, list[int]] = {}
        for i, hit in enumerate(hits):
            if hit.type == "chunk":
                places.setdefault(str(hit.fields["artifact_id"]), []).append(i)
        if not places or not words:
            return hits
        idf = shared_idf([self.stats(c, words, ()) for c in collections], words)
        shown: list[Hit | None] = list(hits)
        for artifact_id, where in places.items():
            found = [hits[i] for i in where]
            indexing = any(h.fields.get("indexing") for h in found)
            chunks = self.artifacts.chunk_window(artifact_id, 0, LAST, indexing)
            if not chunks:
                continue  # deleted since it was ranked: its hits stay as found
            spans = passages(chunks, words, idf, {h.id: h.score for h in found}, len(where), self.look)
            for i, place in enumerate(where):  # fewer passages than places: they cover the document
                shown[place] = passage_hit(hits[place], found, chunks, spans[i]) if i < len(spans) else None
        return [h for h in shown if h is not None]


LAST = 2**31 - 1  # chunk_window's bound for "every chunk of the document"


def passage_hit(slot: Hit, found: Sequence[Hit], chunks: Sequence[ArtifactChunk], span: Span) -> Hit:
    """The passage as a chunk hit in ``slot``'s place (its score: the order stays the search's): the
    anchor chunk's id and index, its text, its ``start_char``/``end_char`` in the artifact and, when it
    joins several chunks, their first and last index (``chunk_range``). Its ``signals`` are those of
    the chunks the search retrieved inside it (each signal's best rank), or else its rank in the
    document by this second look (``in_document``)."""
    inside = chunks[span.first:span.last + 1]
    anchor = chunks[span.anchor]
    ids = {c.id for c in inside}
    retrieved = [h for h in found if h.id in ids]
    own = next((h for h in retrieved if h.id == anchor.id), retrieved[0] if retrieved else slot)
    signals: dict[str, int] = {}
    for hit in retrieved:
        for signal, rank in (hit.fields.get("signals") or {}).items():
            signals[signal] = min(rank, signals.get(signal, rank))
    similarity = max((h.fields["similarity"] for h in retrieved if h.fields.get("similarity") is not None),
                     default=None)
    structure = {k: v for k, v in anchor.metadata.items() if k not in ("indexed", "heading_levels")}
    fields = {k: v for k, v in own.fields.items() if k not in ("structure", "signals", "similarity")}
    fields.update({"chunk_index": anchor.index, "start_char": span.start, "end_char": span.end,
                   **({"chunk_range": [inside[0].index, inside[-1].index]} if len(inside) > 1 else {}),
                   **({"structure": structure} if structure else {}), "similarity": similarity,
                   "signals": signals or {"in_document": 1 + found.index(slot)}})
    offset = inside[0].start_char
    return Hit(anchor.id, "chunk", slot.score, assembled(inside)[span.start - offset:span.end - offset], fields)


def looked(retrieve: Retriever, artifacts: ArtifactStore, query: str, hits: list[Hit], collections: Sequence[str],
           mode: object = None, profile: object = None) -> list[Hit]:
    """``hits`` after the second look, unless the search's profile turns it off (``Weights.second_look``)."""
    if not retrieve.config.signal_weights(mode, profile)[1].second_look:
        return hits
    return SecondLook(artifacts, retrieve.ranker.stats)(query, hits, collections)
