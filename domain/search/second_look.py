"""The second look: inside a document a search found, the passage that answers, not a fixed chunk.

Retrieval ranks chunks one by one; a document's answer often lies in a chunk that no signal put near
the top, or across two adjacent chunks. For each document among a search's results the second look
reads its chunks around the retrieved ones (``Look.reach``: 8 before the first, 8 after the last)
and ranks passages of them (domain/search/passage_ranking.py: runs of adjacent
chunks up to ~1,500 characters, scored by the query's words with the search's idf, the search's own
fused score and the heading path). The
document keeps the places its chunks took in the results, filled by its best passages, best first;
a passage's text is the artifact's from its ``start_char`` to its ``end_char``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.model import ArtifactChunk, Hit
from domain.ports import ArtifactStore
from domain.search.lexical import LexicalStats, analyse, shared_idf
from domain.search.passage_ranking import Look, Span, assembled, passages
from domain.search.retrieve import Retriever

__all__ = ["Look", "SecondLook", "Span", "assembled", "looked", "passage_hit", "passages"]


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
        documents = {a: self._around(a, [hits[i] for i in where]) for a, where in places.items()}
        shown: list[Hit | None] = list(hits)
        for artifact_id, where in places.items():
            found = [hits[i] for i in where]
            chunks = documents[artifact_id]
            if not chunks:
                continue  # deleted since it was ranked: its hits stay as found
            spans = passages(chunks, words, idf, {h.id: h.score for h in found}, len(where), self.look)
            for i, place in enumerate(where):  # fewer passages than places: they cover the document
                shown[place] = passage_hit(hits[place], found, chunks, spans[i]) if i < len(spans) else None
        return [h for h in shown if h is not None]

    def _around(self, artifact_id: str, found: Sequence[Hit]) -> list[ArtifactChunk]:
        """The document's chunks from ``Look.reach`` before its first retrieved chunk to as many after its
        last (every chunk when ``reach`` is 0)."""
        indexing = any(h.fields.get("indexing") for h in found)
        if not self.look.reach:
            return self.artifacts.chunk_window(artifact_id, 0, LAST, indexing)
        at = [int(h.fields["chunk_index"]) for h in found]
        return self.artifacts.chunk_window(artifact_id, max(0, min(at) - self.look.reach), max(at) + self.look.reach,
                                           indexing)

LAST = 2**31 - 1  # chunk_window's bound for "every chunk of the document"
# What of a chunk's metadata a passage does not show (a result page has no tokens to spare): the headings'
# levels and the section anchor (both follow from the heading path; artifact_get's chunks have them).
UNSHOWN_STRUCTURE = frozenset({"indexed", "heading_levels", "section_anchor"})


def passage_hit(slot: Hit, found: Sequence[Hit], chunks: Sequence[ArtifactChunk], span: Span) -> Hit:
    """The passage as a chunk hit in ``slot``'s place (its score: the order stays the search's): the
    anchor chunk's id and index, its text, its ``start_char``/``end_char`` in the artifact and, when it
    joins several chunks, their first and last index (``chunk_range``). Its ``signals`` and
    ``similarity`` are those of the place's chunk when the passage holds it, else of the best chunk
    the search retrieved inside it, else its rank in the document by this second look (``in_document``)."""
    inside = chunks[span.first:span.last + 1]
    anchor = chunks[span.anchor]
    ids = {c.id for c in inside}
    retrieved = [h for h in found if h.id in ids]
    # What ranked the passage: the chunk of its place when the passage holds it (its score and signals
    # agree then), else the best retrieved chunk it holds; the document's fields either way.
    own = slot if slot.id in ids else (retrieved[0] if retrieved else slot)
    signals = own.fields.get("signals") if own.id in ids else None
    similarity = own.fields.get("similarity") if own.id in ids else None
    structure = {k: v for k, v in anchor.metadata.items() if k not in UNSHOWN_STRUCTURE}
    for key, chunk in (("start_line", inside[0]), ("end_line", inside[-1])):  # a passage of code: its lines
        if key in structure and key in chunk.metadata:
            structure[key] = chunk.metadata[key]
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
