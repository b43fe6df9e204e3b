"""Pure ranking helpers: best piece per record, and fetch-until-enough over a vector index."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.model import VectorMatch


def best_per_record(matches: Sequence[VectorMatch]) -> list[VectorMatch]:
    """Keep each record's best-scoring piece, ranked by score (ties keep index order)."""
    best: dict[str, VectorMatch] = {}
    for match in matches:
        kept = best.get(match.record_id)
        if kept is None or match.score > kept.score:
            best[match.record_id] = match
    return sorted(best.values(), key=lambda m: -m.score)


def fetch_distinct(
    query: Callable[[int], list[VectorMatch]],
    keep: Callable[[list[VectorMatch]], list[VectorMatch]],
    limit: int,
    first_fetch: int,
    ceiling: int = 10_000,
) -> list[VectorMatch]:
    """Ask for more pieces until ``limit`` distinct kept records exist or the index runs dry.

    De-duplication and dropping stale or filtered records happen before cutting to ``limit``,
    so a search never returns fewer results than exist because of them.
    """
    fetch = max(first_fetch, limit)
    while True:
        matches = query(fetch)
        kept = keep(best_per_record(matches))
        if len(kept) >= limit or len(matches) < fetch or fetch >= ceiling:
            return kept[:limit]
        fetch = min(fetch * 4, ceiling)


RRF_K = 60


def reciprocal_rank_fusion(ranked: dict[str, list[str]], k: int = RRF_K) -> dict[str, tuple[float, list[str]]]:
    """score(id) = sum over lists of 1 / (k + rank), rank from 1; with the lists each id came from."""
    fused: dict[str, tuple[float, list[str]]] = {}
    for source, ids in ranked.items():
        for rank, item in enumerate(ids, start=1):
            score, sources = fused.get(item, (0.0, []))
            fused[item] = (score + 1.0 / (k + rank), [*sources, source])
    return fused
