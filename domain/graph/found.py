"""search_nodes' part of hybrid retrieval: the entities it finds for a query, best first (entity
records by themselves, the records a graph is built from by the entities read from them), held to
what a node search is asked for."""

from __future__ import annotations

from collections.abc import Sequence

from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.graph.entities import ENTITIES
from domain.graph.records import origin_of
from domain.history.usecases import COLLECTION as HISTORY
from domain.model import Hit, RequestContext
from domain.ports.graph import DerivedGraph
from domain.search.retrieval import VECTOR_SIGNALS
from domain.search.retrieve import Retriever

RECORDS_SEARCHED = 10  # records search_nodes asks hybrid retrieval for
# A match by meaning alone that search_nodes keeps is past both (see _evident): on MiniLM, "beekeeping"
# finds "Ada_Quill: Keeps bees on the roof" at 0.56 and "software developer" "Bob: likes programming" at
# 0.43, while "nothing like it" comes no nearer than 0.26 to any of them; e5-small: 0.84, 0.82 and 0.80.
NODE_FLOOR = 0.25  # of the way from the similarity floor to 1
CLOSE = 0.75  # of the way from the similarity floor to the best match by meaning


def found_entities(retrieve: Retriever, derived: DerivedGraph | None, text: str,
                   context: RequestContext) -> list[str]:
    """The entities hybrid retrieval finds for ``text``, best first: entity records by themselves,
    records by the entities read from them (from a chunk, that chunk's alone)."""
    wheres = {ENTITIES: {}, **({"memory": {}, HISTORY: {}, CHUNKS: {}, WHOLE: {}} if derived else {})}
    hits = retrieve(text, wheres, RECORDS_SEARCHED, context=context)
    hits = [h for h in hits if _evident(h, hits, retrieve.config.min_similarity)]
    places = [origin_of(h) for h in hits]
    parts: dict[tuple[str, str], set[int]] = {}
    for (kind, record, part) in (p for p in places if p is not None):
        parts.setdefault((kind, record), set()).add(part)
    named = derived.named_by(context.actor, list(parts), parts) if derived and parts else {}
    found: list[str] = []
    for hit, place in zip(hits, places, strict=True):
        if place is None:
            found.append(str(hit.fields["name"]))
        else:
            found += named.get(place[:2], [])
    return found


def _evident(hit: Hit, hits: Sequence[Hit], floor: float) -> bool:
    """Whether a node search keeps a hit: found by words (BM25, exact tokens, a name, a date), or by a
    meaning both clear (NODE_FLOOR of the way from the search's similarity floor to 1) and close to the
    best one found (CLOSE of the way from the floor to it). A node search is asked for what the query
    names: a search for "Priya" must not list Tom, Python and AttributeError because their records are
    the nearest vectors, nor a query about nothing stored whatever is nearest (each model's cosines sit in a band
    of their own: MiniLM's floor is 0.2, e5's 0.75, so both bars are set from the floor)."""
    if any(signal not in VECTOR_SIGNALS for signal in hit.fields.get("signals") or {}):
        return True
    best = max((h.fields.get("similarity") or floor for h in hits), default=floor)
    similarity = hit.fields.get("similarity")
    return similarity is not None and similarity >= floor + max(NODE_FLOOR * (1 - floor), CLOSE * (best - floor))
