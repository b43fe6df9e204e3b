"""Pure ranking helpers: best piece per record, weighted reciprocal rank fusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain.model import VectorMatch


def best_per_record(matches: Sequence[VectorMatch]) -> list[VectorMatch]:
    """Keep each record's best-scoring piece, ranked by score (ties keep index order)."""
    best: dict[str, VectorMatch] = {}
    for match in matches:
        kept = best.get(match.record_id)
        if kept is None or match.score > kept.score:
            best[match.record_id] = match
    return sorted(best.values(), key=lambda m: -m.score)


def weighted_rrf(ranked: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int
                 ) -> dict[str, tuple[float, dict[str, int]]]:
    """score(id) = sum over signals of weight / (k + rank), rank from 1; with each signal's rank of it."""
    fused: dict[str, tuple[float, dict[str, int]]] = {}
    for signal, ids in ranked.items():
        weight = weights[signal]
        for rank, item in enumerate(ids, start=1):
            score, ranks = fused.get(item, (0.0, {}))
            fused[item] = (score + weight / (k + rank), {**ranks, signal: rank})
    return fused
