"""Reranking: a second, closer look at a search's best candidates (issue 43, items 3 and 4).

Two kinds. A ``CandidateScorer`` is the learned stage: a small model shipped in the package that scores
the features the domain computes for each candidate (signal ranks and scores, cosine, word coverage,
collection, recency...). A ``TextReranker`` is an opt-in rerank model behind an API (Cohere, Jina, Voyage,
an OpenAI-style ``/v1/rerank``): it reads the query and each candidate's text. When a text reranker fails
the search falls back to the learned stage and says so in a warning; it never fails the search."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class RerankerError(Exception):
    """A text reranker could not answer (timeout, refused key, rate limit, an answer that is not one).
    ``str(error)`` is one line fit to show a user; it never holds a key."""


class CandidateScorer(Protocol):
    """The learned stage: one score per candidate from its features (higher is better); deterministic."""

    version: str  # names the shipped model (its file's digest or release), shown where a search explains itself

    def score(self, features: Sequence[Mapping[str, float]]) -> list[float]: ...


class TextReranker(Protocol):
    """A rerank model over text: one relevance score per document, in the documents' order."""

    name: str  # e.g. "cohere/rerank-v3.5", shown in a fallback warning

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Raises ``RerankerError`` on any failure; never returns fewer or more scores than documents."""
        ...
