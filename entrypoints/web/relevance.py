"""Which hits the search page lists: when the query's words found records, a hit found by meaning alone
(no word of the query in it, no word signal) is listed only when it is close in meaning. Such a hit
at the relevance floor is what a search for a rare word drags in beside the records that hold the
word ("eight unrelated chunks for a unique word"); the page says how many it left out and links to
them. The tools answer as before: this is the page's reading of their answer, not a ranking rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.search.retrieval import VECTOR_SIGNALS
from entrypoints.web.text import query_words

# "Close in meaning": this share of the way from the embedder's relevance floor to a perfect match
# (MiniLM's floor 0.2: 0.44; e5-small's 0.75: 0.825; the API models' 0.1: 0.37).
CLOSE = 0.3


def close_similarity(floor: float) -> float:
    return round(floor + (1.0 - floor) * CLOSE, 3)


def worded(hit: dict[str, Any], query: str) -> bool:
    """Found by the query's words: a signal other than the vectors' (words, exact tokens, a date, a
    graph link), found while indexing (by its words only), or a word of the query in its text."""
    if hit.get("indexing") or any(signal not in VECTOR_SIGNALS for signal in hit.get("signals") or {}):
        return True
    pattern = query_words(query)
    return pattern is not None and pattern.search(str(hit.get("text") or "")) is not None


def listed(hits: Sequence[dict[str, Any]], query: str, mode: str, close: float,
           show_all: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(hits listed, hits left out): meaning-only hits below ``close`` are left out when another hit holds
    the query's words (never in vector mode, which asks for meaning alone, nor when ``show_all``)."""
    if show_all or mode == "vector" or not any(worded(h, query) for h in hits):
        return list(hits), []
    kept, out = [], []
    for hit in hits:
        weak = not worded(hit, query) and (hit.get("similarity") or 0.0) < close
        (out if weak else kept).append(hit)
    return kept, out
