"""Search signals and how they are weighed: spec 004's weighted reciprocal rank fusion and its profiles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from domain.validation import require_choice

SYMBOL_WEIGHT = 0.3  # the symbol signal in memtrove's default profile (README "Code search")
MODES = ("hybrid", "vector", "lexical")
SIGNALS = ("semantic", "contextual", "lexical", "exact", "graph", "symbol", "when")  # "when" last: it reads the others' hits
VECTOR_SIGNALS = frozenset({"semantic", "contextual"})  # the signals that need the query's embedding


@dataclass(frozen=True, slots=True)
class Weights:
    """How much each signal's rank counts: score = sum of weight / (k + rank)."""

    lexical: float
    semantic: float
    exact: float
    k: int = 60  # the RRF constant: smaller lets the first ranks of each signal count for more
    context: float = 0.35  # how much a conversation turn's neighbours' words count in its lexical score
    # Vector similarity of a conversation turn read after the turn before it: a reply ("Yes, last
    # Friday!") carries what it answers. A signal of its own; only history turns have it.
    contextual: float = 0.0
    # Records naming the entities of the caller's graph that the query names (and their neighbours').
    graph: float = 0.0
    # Records of the time a query's dates name ("in June", "last year"), ranked by the query's words.
    when: float = 0.0
    # Chunks holding the definitions of an indexed codebase whose names the query writes, in any spelling.
    symbol: float = 0.0
    # The rerank stage (domain/search/rerank.py) orders the best fused candidates; off: the fused order.
    rerank: bool = True
    # The second look at a found document's chunks (domain/search/second_look.py), opt-in for now; off: chunks as retrieved.
    second_look: bool = False

    def of(self, signal: str) -> float:
        return float(getattr(self, signal))


PROFILES: Mapping[str, Weights] = {
    # Spec 004 Part 2 ("trigram" is the exact-token signal), with its k = 60: plain weighted RRF, each
    # hit's score the fusion of its own ranks (no rerank stage), as the spec defines them.
    "default": Weights(lexical=0.4, semantic=0.5, exact=0.1, rerank=False),
    "technical": Weights(lexical=0.5, semantic=0.35, exact=0.15, rerank=False),
    "conversational": Weights(lexical=0.25, semantic=0.7, exact=0.05, rerank=False),
    "code": Weights(lexical=0.3, semantic=0.3, exact=0.4, rerank=False),
    # memtrove's default: chosen on the LoCoMo benchmark (README "Retrieval quality"). With the
    # local MiniLM model, words (BM25 with neighbouring turns) carry about twice the evidence that
    # vectors do, and a small k lets a first rank in either signal decide. The turn-in-context vectors
    # add what the turn alone does not say (+0.013 recall@10, in every one of the five conversations).
    # The graph signal (records naming the entities the query names, and their neighbours') adds +0.006
    # recall@10 on LoCoMo's five held-out conversations and lifts every category (README "Knowledge graph").
    # The date signal (records of the time a query's dates name, by its words) at 0.5: +0.014 recall@10
    # and +0.024 recall@1 on LoCoMo, temporal and single-hop questions up, no category down (README "Dates in queries").
    "recall": Weights(lexical=0.55, semantic=0.3, exact=0.1, k=10, contextual=0.1, graph=0.1, when=0.5,
                      symbol=SYMBOL_WEIGHT),
}
DEFAULT_PROFILE = "recall"


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Fusion settings: named weight profiles, the RRF constant, and how deep each signal looks."""

    profiles: Mapping[str, Weights] = field(default_factory=lambda: dict(PROFILES))
    default_profile: str = DEFAULT_PROFILE
    semantic_top_k: int = 60
    lexical_top_k: int = 60
    exact_top_k: int = 20
    # A hit found by its vectors alone (no word or exact-token evidence) is kept only from this
    # cosine similarity up: an unrelated memory at similarity -0.03 is no answer, however few others there are.
    min_similarity: float = 0.0
    # Results one document may take in a search that may return its chunks (hybrid_search, artifact_search).
    per_artifact: int = 3  # passages bench: hit@5 0.50 -> 0.60 from 1 to 3, no gain past 4

    def top_k(self, signal: str) -> int:
        return {"semantic": self.semantic_top_k, "contextual": self.semantic_top_k, "lexical": self.lexical_top_k,
                "exact": self.exact_top_k, "graph": self.lexical_top_k, "when": self.lexical_top_k, "symbol": self.lexical_top_k}[signal]

    def signal_weights(self, mode: object, profile: object) -> tuple[dict[str, float], Weights]:
        """The signals a search runs with their weights, and the profile; a mode naming one signal runs only it."""
        chosen = require_choice("mode", "hybrid" if mode is None else mode, MODES)
        name = require_choice("profile", self.default_profile if profile is None else profile,
                              sorted(self.profiles))
        weights = self.profiles[name]
        if chosen == "vector":
            return {"semantic": 1.0}, weights
        if chosen == "lexical":
            return {"lexical": 1.0, "exact": weights.exact / weights.lexical if weights.lexical else 1.0}, weights
        return {s: weights.of(s) for s in SIGNALS if weights.of(s) > 0}, weights
