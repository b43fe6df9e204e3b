"""Hybrid retrieval: vector, word (BM25) and exact-token rankings across collections, fused by weighted RRF."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from domain.access.principal import Identity
from domain.access.rules import restrict
from domain.memories.validity import holding

from domain.search.lexical import LexicalQuery, analyse, shared_idf, telling
from domain.model import Hit, LexicalMatch, RequestContext, Vector, VectorMatch
from domain.ports import Embedder, Filter
from domain.search.fusion import weighted_rrf
from domain.search.graph_signal import GraphSignal
from domain.search.symbol_signal import SymbolSignal
from domain.search.retrieval import SIGNALS, VECTOR_SIGNALS, RetrievalConfig, Weights
from domain.artifacts.usecases import CHUNKS, WHOLE
from domain.history.usecases import COLLECTION as HISTORY, CONTEXT_COLLECTION
from domain.common import nothing
from domain.search.ranking import Ranker, Records
from domain.search.rerank import Evidence, rerank
from domain.ports.reranking import CandidateScorer, TextReranker
from domain.search.when import DateReader, newest, within
from domain.graph.entities import ENTITIES

# What callers see a collection called (the spec's names); the index keys are shorter.
SHOWN = {WHOLE: "artifacts", CHUNKS: "artifact_chunks", "memory": "memory", HISTORY: "history",
         ENTITIES: "entities"}


def fetch_rounds(limit: int) -> list[int]:
    """How many hits each signal fetches per round, deeper until ``limit`` distinct results exist."""
    return [limit * 3, limit * 12, limit * 48, 10_000]


@dataclass(frozen=True, slots=True)
class Retriever:
    embedder: Embedder
    ranker: Ranker
    config: RetrievalConfig
    # Brings the vector index up to date with every write committed before the search (read-your-writes).
    catch_up: Callable[[], None] = nothing
    graph: GraphSignal | None = None  # the graph signal (weighed by the profile's ``graph``)
    dates: DateReader | None = None  # the date signal's reader (weighed by the profile's ``when``)
    symbols: SymbolSignal | None = None  # the symbol signal (weighed by the profile's ``symbol``)
    identity: Identity = RequestContext  # who is calling, when the search does not say
    now: Callable[[], float] = time.time
    scorer: CandidateScorer | None = None  # the learned rerank stage (domain/search/rerank.py)
    text_reranker: TextReranker | None = None  # an opt-in rerank model: orders the candidates when it answers

    def __call__(self, query: str, wheres: Mapping[str, Filter], limit: int, mode: object = None,
                 profile: object = None, context: RequestContext | None = None,
                 per_artifact: int | None = None, notes: list[str] | None = None, reranked: bool = True) -> list[Hit]:
        """Up to ``limit`` hits across the collections in ``wheres`` (collection -> its index filter).

        Each signal ranks the collections' hits together; the signals' rankings are fused by
        weighted RRF. The rerank stage then orders the best fused candidates (unless the profile turns it
        off, the caller says ``reranked=False``, or the mode asks for one signal's order); a text reranker that fails leaves it to the learned
        scorer and appends a warning to ``notes``. Up to ``per_artifact`` hits per artifact (its best
        chunks, or itself) are kept before cutting to ``limit``; a hit with only vector evidence below the
        similarity floor is not.
        """
        cap = self.config.per_artifact if per_artifact is None else per_artifact
        context = context or self.identity()
        # What the caller may see, inside every index query (a search fills its limit with it).
        now = self.now()
        # Memories that hold at the time asked (now, or as of), inside every index query: the versions
        # that do not (a long history, a future one) never take the places of those that do.
        moment = now if context.as_of is None else context.as_of
        given = dict(wheres)
        own = {c: {**(where or {}), **holding(moment)} if c == "memory" else where for c, where in given.items()}
        wheres = {c: w for c, where in own.items() if (w := restrict(where, context, now)) is not None}
        if not wheres:
            return []
        cheap = getattr(self.ranker.vectors, "filters_cheaply", True)
        # An index whose filters are costly is asked for memories by the time only when its answer holds one
        # that does not hold then (Ranker.nearest): most answers hold none, and at 10,000 memories Chroma's
        # filtered query took ten times its plain one.
        held = {} if cheap else {c: moment for c in wheres if c == "memory"}
        index_wheres = {c: w if cheap else vector_where(given[c], w) for c, w in wheres.items()}
        weights, chosen = self.config.signal_weights(mode, profile)
        terms = analyse(query)
        if not terms.exact:
            weights.pop("exact", None)
        if not terms.words:
            weights.pop("lexical", None)
        if HISTORY not in wheres:
            weights.pop("contextual", None)
        linked = self.graph.ranked(context.actor, query) if "graph" in weights and self.graph else {}
        if not linked:
            weights.pop("graph", None)
        named = self.symbols.ranked(query, wheres) if "symbol" in weights and self.symbols else {}
        if not named:
            weights.pop("symbol", None)
        if not (self.dates and terms.words):
            weights.pop("when", None)
        spans: list[tuple[float, float]] | None = None  # the query's dates, read once the other signals ranked
        vectors = VECTOR_SIGNALS & set(weights)
        vector = self.embedder.embed_query(query) if vectors else None
        if vectors:
            self.catch_up()
        # One idf per word (and per exact token) over every collection searched: a word's score is on one
        # scale in memories, turns and chunks, so each signal may rank their matches together (_best).
        # Beside the vectors, the lexical signal matches only the words that tell records apart (``telling``);
        # the date signal, all of them (being in the dates asked is its evidence).
        stats = [self.ranker.stats(c, terms.words, terms.exact) for c in wheres] \
            if {"lexical", "when", "exact"} & set(weights) else []
        told = telling(stats, terms.words) if vectors else set(terms.words)
        dated = shared_idf(stats, terms.words)
        idf = {"words": {w: v for w, v in dated.items() if w in told}, "dated": dated,
               "tokens": shared_idf(stats, terms.exact, exact=True)}
        fused: list[Hit] = []
        kept: list[Hit] = []
        ranked: dict[str, list[Hit]] = {}
        depths: dict[str, int] = {}
        read: Records = {}  # the records this search has read: each once, whatever signal or round finds it
        owners = 0  # distinct artifacts and records found (before the cap), to see a round add nothing
        for fetch in fetch_rounds(limit):
            if depths and all(max(fetch, self.config.top_k(s)) == d for s, d in depths.items()):
                continue  # this round would fetch exactly what the last one did
            depths = {s: max(fetch, self.config.top_k(s)) for s in weights}
            more = False
            ranked = {}
            for signal in list(weights):
                depth = max(fetch, self.config.top_k(signal))
                if signal == "when" and spans is None:
                    spans = self.dates(query, newest(ranked) or now)  # type: ignore[misc]
                if signal == "when" and not spans:
                    weights.pop(signal)
                    continue
                found: dict[str, list[VectorMatch | LexicalMatch]] = {}
                for collection, where in wheres.items():
                    if signal == "when":
                        got, full = self.ranker.worded(collection, terms.words, depth, within(where, spans or []),
                                                       chosen.context, idf["dated"])
                    elif signal == "symbol":
                        got, full = self.symbols.matches(collection, named.get(collection, []), where, depth), False  # type: ignore[union-attr]
                    elif signal == "graph":
                        got, full = self.graph.matches(collection, linked.get(collection, []), where, depth), False  # type: ignore[union-attr]
                    else:
                        got, full = self._found(signal, collection, terms, vector, depth, where, chosen,
                                                index_wheres[collection], idf, held.get(collection))
                    if signal in VECTOR_SIGNALS and got and min(m.score for m in got) < self.config.min_similarity:
                        full = False  # every vector deeper scores below the floor, so does any record found there
                    found[collection] = list(got)
                    more = more or full
                ranked[signal] = self._best(found, depth, context, read)
            floor = below_floor(ranked, self.config.min_similarity)
            kept = [h for h in fuse_signals(ranked, weights, chosen.k) if h.id not in floor]
            fused = best_per_artifact(kept, cap)
            distinct = len({h.fields.get("artifact_id") or h.id for h in kept})
            if len(fused) >= limit or not more or distinct == owners:
                break  # enough, nothing deeper, or deeper only gave more passages of capped documents
            owners = distinct
        if reranked and chosen.rerank and mode in (None, "hybrid") and kept:
            evidence = Evidence(terms.words, idf["dated"], spans or ())
            fused = best_per_artifact(rerank(query, kept, ranked, evidence, self.scorer, self.text_reranker, notes), cap)
        return fused[:limit]


    def _found(self, signal: str, collection: str, terms: LexicalQuery, vector: Vector | None, depth: int,
               where: Filter, profile: Weights, index_where: Filter | None = None,
               idf: Mapping[str, Mapping[str, float]] | None = None, held_at: float | None = None
               ) -> tuple[Sequence[VectorMatch | LexicalMatch], bool]:
        if signal == "lexical":
            return self.ranker.worded(collection, terms.words, depth, where, profile.context, (idf or {}).get("words"))
        if signal == "exact":
            return self.ranker.exact(collection, terms.exact, depth, where, (idf or {}).get("tokens"))
        if signal == "contextual" and collection != HISTORY:
            return [], False
        index = CONTEXT_COLLECTION if signal == "contextual" else None
        return self.ranker.nearest(collection, vector or [], depth, where, index, index_where, held_at)

    def _best(self, found: Mapping[str, list[VectorMatch | LexicalMatch]], depth: int, context: RequestContext,
              read: Records) -> list[Hit]:
        """One signal's best ``depth`` hits across collections (cosine similarities of one model compare
        across them, and so do word and exact-token scores: every collection weighs a term by the one
        idf the search computed over all of them; "first of its collection" would not compare).

        Only as many records are read as that takes: a record's hit scores no better than its best
        match, so records are read best match first, and reading stops once ``depth`` hits score
        above every record not read yet (most searches read ``depth`` records, not one list per
        collection). A hit may show its score rounded to 6 decimals (a memory's): its bound is rounded
        up alike."""
        bounds: dict[tuple[str, str], float] = {}
        for collection, matches in found.items():
            for m in matches:
                key = (m.record_id, collection)
                bounds[key] = max(bounds.get(key, m.score), m.score, round(m.score, 6))
        order = sorted(bounds.items(), key=lambda item: (-item[1], item[0][0]))
        hits: list[Hit] = []
        start = 0
        while start < len(order):
            batch = order[start:start + depth] if start == 0 else order[start:]
            start += len(batch)
            for collection in dict.fromkeys(c for (_, c), _ in batch):
                ids = {record for (record, c), _ in batch if c == collection}
                chosen = [m for m in found[collection] if m.record_id in ids]
                hits += [tagged(h, collection) for h in self.ranker.hydrate(collection, chosen, context, read)]
            hits.sort(key=lambda h: (-h.score, h.id))
            if len(hits) >= depth and start < len(order) and hits[depth - 1].score > order[start][1]:
                break
        return hits[:depth]


def vector_where(own: Filter | None, restricted: Filter) -> Filter:
    """For a vector index whose filters are costly: the caller's own filter, its sensitivity held to the
    caller's clearance; the rest of the access rule is applied on the hydrated rows."""
    kept = dict(own or {})
    if "sensitivity" in kept:
        kept["sensitivity"] = restricted["sensitivity"]
    return kept


def tagged(hit: Hit, collection: str) -> Hit:
    return Hit(hit.id, hit.type, hit.score, hit.content, {**hit.fields, "collections": [SHOWN[collection]]})


def fuse_signals(ranked: Mapping[str, list[Hit]], weights: Mapping[str, float], k: int) -> list[Hit]:
    """Hits scored by weighted RRF over the signals' rankings, best first, each naming its ranks."""
    fused = weighted_rrf({s: [h.id for h in hits] for s, hits in ranked.items()}, weights, k)
    by_id: dict[str, Hit] = {}
    for signal in SIGNALS:  # the vector hit carries the similarity
        for hit in ranked.get(signal, []):
            by_id.setdefault(hit.id, hit)
    similarity = {h.id: h.score for h in ranked.get("semantic", [])}
    hits = [Hit(i, by_id[i].type, round(score, 6), by_id[i].content,
                {**by_id[i].fields, "similarity": round(similarity[i], 6) if i in similarity else None,
                 "signals": ranks})
            for i, (score, ranks) in fused.items()]
    # Ties fall to the better similarity, then the id: the order never depends on dict order.
    return sorted(hits, key=lambda h: (-h.score, -(h.fields["similarity"] or 0.0), h.id))


def best_per_artifact(hits: list[Hit], cap: int = 1) -> list[Hit]:
    """Up to ``cap`` hits per artifact (its best chunks, or the whole artifact), other hits as they are;
    order kept."""
    seen: dict[str, int] = {}
    kept: list[Hit] = []
    for hit in hits:
        key = hit.fields.get("artifact_id") if hit.type in ("artifact", "chunk") else None
        if key is not None:
            if seen.get(key, 0) >= cap:
                continue
            seen[key] = seen.get(key, 0) + 1
        kept.append(hit)
    return kept


def below_floor(ranked: Mapping[str, list[Hit]], min_similarity: float) -> set[str]:
    """Hits found only by vectors (no word or exact-token evidence), none of whose vectors reach ``min_similarity``."""
    if min_similarity <= -1.0:
        return set()
    evidence = {h.id for signal, hits in ranked.items() if signal not in VECTOR_SIGNALS for h in hits}
    best: dict[str, float] = {}
    for signal in VECTOR_SIGNALS & set(ranked):
        for hit in ranked[signal]:
            best[hit.id] = max(best.get(hit.id, -1.0), hit.score)
    return {i for i, score in best.items() if score < min_similarity and i not in evidence}
