"""The rerank stage: a closer look at a search's best fused candidates (issue 43, item 3).

The top ``DEPTH`` fused hits are described by features the search already has (no index is asked again):
each signal's rank and score, cosine similarity, how much of the query's idf weight the record's words
(and those of its neighbours among the candidates) cover, the query's words in a chunk's title and
headings, the record's kind, how recent it is among the candidates, whether it is of the time the query's
dates name. A ``CandidateScorer`` (the learned stage) or a ``TextReranker`` (an opt-in rerank model) scores
them and they are put in that order; a text reranker that fails leaves the order to the learned stage and
says so in ``notes``.

A reordered hit keeps its signals' ranks; its ``score`` is the fused score of the place it takes (the k-th
hit shows the k-th best fused score), so a page's scores still fall from first to last on one scale.
"""

from __future__ import annotations

import math
import re
import statistics
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from domain.model import Hit
from domain.ports.reranking import CandidateScorer, RerankerError, TextReranker
from domain.search.retrieval import SIGNALS, VECTOR_SIGNALS
from domain.search.when import hit_time

DEPTH = 50  # candidates the stage reorders (of the fused ranking, before the per-artifact cap and the limit)
KINDS = ("memory", "history", "chunk", "artifact", "entity")
_SUFFIXES = ("ing", "ed", "es", "s", "ly")
_ENDINGS = ("", "e", "s", "es", "ed", "d", "ing", "er", "ers", "y", "ies")
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the search knew when it fused: the query's words with their idf (over every collection
    searched; none: each word weighs 1) and the spans of time its dates name."""

    words: tuple[str, ...]
    idf: Mapping[str, float] = field(default_factory=dict)
    spans: Sequence[tuple[float, float]] = ()


def stem(word: str) -> str:
    """A crude stem for matching a query word as a prefix of a record's words ("running" -> "runn")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


FEATURES: tuple[str, ...] = (
    *(f"rr_{s}" for s in SIGNALS), *(f"rel_{s}" for s in SIGNALS if s not in VECTOR_SIGNALS),
    "cos", "cos_gap", "cos_context", "fused_rr", "fused_rel", "signals",
    "cover_idf", "cover_all", "cover_rarest", "cover_count", "near_cover_gain", "near_lexical", "near_cos",
    "title_cover", "length", "recency", "dated", "in_span",
    *(f"is_{k}" for k in KINDS),
)


def features(hits: Sequence[Hit], ranked: Mapping[str, Sequence[Hit]], evidence: Evidence) -> list[dict[str, float]]:
    """One feature mapping (every name of ``FEATURES``) per hit, in the hits' order; hits fused best first."""
    scores = {s: {h.id: h.score for h in found} for s, found in ranked.items()}
    best = {s: max((v for v in by.values() if v > 0), default=0.0) for s, by in scores.items()}
    weight = {w: max(evidence.idf.get(w, 1.0), 1e-6) for w in evidence.words}
    total = sum(weight.values()) or 1.0
    rarest = max(weight, key=lambda w: (weight[w], w)) if weight else None
    roots = {w: _root(w) for w in weight}

    def found(text: str) -> set[str]:
        """The query words ``text`` holds (by their stems; the text's words read once, sorted for prefixes)."""
        tokens = set(_TOKEN.findall(text.lower()))
        words = sorted(tokens)
        held: set[str] = set()
        for w, (root, forms) in roots.items():
            if forms and not forms.isdisjoint(tokens):
                held.add(w)
            elif not forms and (i := bisect_left(words, root)) < len(words) and words[i].startswith(root):
                held.add(w)
        return held

    held = [found(h.content) for h in hits]
    where = {place: i for i, h in enumerate(hits) if (place := _place(h)) is not None}
    times = [hit_time(h) for h in hits]
    known = [t for t in times if t is not None]
    early, late = (min(known), max(known)) if known else (0.0, 0.0)
    top_cos = max((h.fields.get("similarity") or -1.0 for h in hits), default=0.0)
    top_fused = hits[0].score if hits and hits[0].score > 0 else 1.0
    kinds = [h.type for h in hits]
    typical = {k: statistics.median(len(h.content) + 1 for h in hits if h.type == k) for k in set(kinds)}
    rows: list[dict[str, float]] = []
    for i, hit in enumerate(hits):
        ranks = hit.fields.get("signals") or {}
        row = {f"rr_{s}": 1.0 / ranks[s] if s in ranks else 0.0 for s in SIGNALS}
        row.update({f"rel_{s}": _ratio(scores.get(s, {}).get(hit.id, 0.0), best.get(s, 0.0))
                    for s in SIGNALS if s not in VECTOR_SIGNALS})
        cos = hit.fields.get("similarity")
        row["cos"] = float(cos) if cos is not None else 0.0
        row["cos_gap"] = float(cos) - top_cos if cos is not None else -1.0
        row["cos_context"] = scores.get("contextual", {}).get(hit.id, 0.0)
        row["fused_rr"] = 1.0 / (i + 1)
        row["fused_rel"] = hit.score / top_fused
        row["signals"] = len(ranks) / len(SIGNALS)
        mine = held[i]
        row["cover_idf"] = sum(weight[w] for w in mine) / total
        row["cover_all"] = float(bool(weight) and len(mine) == len(weight))
        row["cover_rarest"] = float(rarest in mine)
        row["cover_count"] = len(mine) / len(weight) if weight else 0.0
        near = _neighbours(hit, where)
        around = mine.union(*(held[j] for j in near)) if near else mine
        row["near_cover_gain"] = sum(weight[w] for w in around - mine) / total
        row["near_lexical"] = max((_ratio(scores.get("lexical", {}).get(hits[j].id, 0.0), best.get("lexical", 0.0))
                                   for j in near), default=0.0)
        row["near_cos"] = max((float(hits[j].fields.get("similarity") or 0.0) for j in near), default=0.0)
        row["title_cover"] = sum(weight[w] for w in found(_title(hit))) / total
        # Against the candidates of its own kind: a memory is not shorter evidence than a document chunk.
        row["length"] = max(-1.0, min(1.0, math.log((len(hit.content) + 1) / typical[kinds[i]]) / math.log(10.0)))
        when = times[i]
        row["recency"] = (when - early) / (late - early) if when is not None and late > early else 0.5
        row["dated"] = float(bool(evidence.spans))
        row["in_span"] = float(when is not None and any(a <= when <= b for a, b in evidence.spans))
        kind = "entity" if hit.type not in KINDS else hit.type
        row.update({f"is_{k}": float(kind == k) for k in KINDS})
        rows.append(row)
    return rows


def _root(word: str) -> tuple[str, frozenset[str]]:
    """The stem a query word's forms begin with, and (for a stem of 4 letters or fewer) the only forms it
    stands for: the stem with a common ending ("go" is not "good"; "races" finds "racing"). No forms: any
    word the stem begins."""
    root = stem(word)
    return (root, frozenset()) if len(root) > 4 else (root, frozenset(root + e for e in _ENDINGS))


def _ratio(value: float, best: float) -> float:
    return max(0.0, value) / best if best > 0 else 0.0


def _place(hit: Hit) -> tuple[str, str, int] | None:
    """Where a turn or a chunk sits: (kind, its conversation or artifact, its index)."""
    fields = hit.fields
    if hit.type == "history" and fields.get("turn_index") is not None:
        return ("history", str(fields.get("conversation_id")), int(fields["turn_index"]))
    if hit.type == "chunk" and fields.get("chunk_index") is not None:
        return ("chunk", str(fields.get("artifact_id")), int(fields["chunk_index"]))
    return None


def _neighbours(hit: Hit, where: Mapping[tuple[str, str, int], int]) -> list[int]:
    """The positions of the hit's neighbours (the turn or chunk before and after it) among the candidates."""
    place = _place(hit)
    if place is None:
        return []
    kind, owner, index = place
    return [j for step in (-1, 1) if (j := where.get((kind, owner, index + step))) is not None]


def _title(hit: Hit) -> str:
    """A chunk's or artifact's title and heading path (other records have none)."""
    if hit.type not in ("chunk", "artifact"):
        return ""
    title = (hit.fields.get("provenance") or {}).get("title") or ""
    path = (hit.fields.get("structure") or {}).get("heading_path") or []
    return " ".join([str(title), *(str(p) for p in path)])


def rerank(query: str, hits: list[Hit], ranked: Mapping[str, Sequence[Hit]], evidence: Evidence,
           scorer: CandidateScorer | None, text: TextReranker | None = None,
           notes: list[str] | None = None) -> list[Hit]:
    """``hits`` (fused, best first) with the first ``DEPTH`` in the order of the text reranker's scores,
    or the learned scorer's (when there is no text reranker, or it failed: one line in ``notes`` says so);
    as they are when neither scores. Ties keep the fused order."""
    top, rest = hits[:DEPTH], hits[DEPTH:]
    if len(top) < 2 or (scorer is None and text is None):
        return hits
    scores: list[float] | None = None
    if text is not None:
        try:
            scores = list(text.rerank(query, [h.content for h in top]))
            if len(scores) != len(top):
                raise RerankerError(f"answered {len(scores)} scores for {len(top)} documents")
        except RerankerError as error:
            scores = None
            if notes is not None:
                then = "the learned rerank stage ordered the results" if scorer else "results are in fused order"
                notes.append(f"reranker {text.name} failed ({error}); {then}")
    if scores is None and scorer is not None:
        scores = list(scorer.score(features(top, ranked, evidence)))
    if scores is None:
        return hits
    order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
    places = [h.score for h in top]  # the fused scores, best first: the k-th hit shows the k-th
    return [_placed(top[i], places[k]) for k, i in enumerate(order)] + rest


def _placed(hit: Hit, score: float) -> Hit:
    return hit if hit.score == score else Hit(hit.id, hit.type, score, hit.content, hit.fields)
