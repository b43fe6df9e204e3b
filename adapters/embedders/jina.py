"""Jina AI embeddings: jina-embeddings-v3 with retrieval tasks, Matryoshka sizes and late chunking."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from adapters.embedders.http_api import HttpEmbedder
from domain.errors import ConfigurationError
from domain.model import Vector

DEFAULT_BASE_URL = "https://api.jina.ai/v1"
V3 = "jina-embeddings-v3"
V3_DIMENSIONS = (32, 1024)  # Matryoshka: any size in this range


class JinaEmbedder(HttpEmbedder):
    """Vectors from the Jina API: task ``retrieval.passage`` for what is stored, ``retrieval.query``
    for searches.

    With ``late_chunking`` on, ``embed_documents`` takes its texts as the consecutive chunks of one
    document and sends them in one request with ``late_chunking: true``: the model reads them as one
    text and pools each chunk's tokens, so every vector is conditioned on the whole document (a
    document longer than the model reads goes as consecutive windows). ``embed_late_chunks`` does
    that whatever the flag; queries are never late-chunked.
    """

    provider = "jina"
    display = "Jina"
    key_variable = "JINA_API_KEY"
    dimensions_variable = "JINA_DIMENSIONS"
    default_base_url = DEFAULT_BASE_URL
    max_batch_size = 2048
    token_ratio = 1.3  # XLM-RoBERTa's pieces are finer than cl100k's, most of all in code
    special_tokens = 2  # <s> and </s>

    def __init__(
        self,
        api_key: str | None,
        model: str = V3,
        dimensions: int = 1024,
        late_chunking: bool = False,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        max_tokens: int = 8192,
        batch_tokens: int = 64_000,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        low, high = V3_DIMENSIONS
        if model == V3 and not low <= dimensions <= high:
            raise ConfigurationError(
                f"JINA_DIMENSIONS={dimensions} is not an output size of {V3}; use {low} to {high}")
        super().__init__(
            api_key=api_key, model=model, dimensions=dimensions, max_tokens=max_tokens, base_url=base_url,
            timeout=timeout, max_retries=max_retries, batch_size=batch_size, batch_tokens=batch_tokens,
            sleep=sleep,
        )
        self.late_chunking = late_chunking

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if self.late_chunking:
            return self.embed_late_chunks(texts)
        return self._batched(texts, lambda batch: self._embed(batch, "retrieval.passage", late=False))

    def embed_query(self, text: str) -> Vector:
        return self._embed([text], "retrieval.query", late=False)[0]

    def embed_late_chunks(self, chunks: Sequence[str]) -> list[Vector]:
        """One vector per chunk of one document, each conditioned on the whole document's text."""
        chunks = list(chunks)
        if not chunks:
            return []
        vectors: list[Vector] = []
        for window, _ in self._windows(chunks, self.max_batch_size):
            vectors.extend(self._embed(window, "retrieval.passage", late=True))
        return vectors

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "late_chunking": self.late_chunking}

    def _embed(self, batch: list[str], task: str, late: bool) -> list[Vector]:
        body = {"model": self.profile.model, "input": batch, "task": task,
                "dimensions": self.profile.dimensions, "late_chunking": late,
                "normalized": True, "embedding_type": "float"}
        return self._vectors(self._post("embeddings", body).get("data"), len(batch))
