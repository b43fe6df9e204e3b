"""Voyage AI embeddings: voyage-3-large and friends, and voyage-context-3's contextualized chunks."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from adapters.embedders.http_api import HttpEmbedder, plan_batches
from domain.errors import ConfigurationError
from domain.model import Vector

DEFAULT_BASE_URL = "https://api.voyageai.com/v1"
OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)  # Matryoshka sizes the models answer with
# Model -> (tokens one text or one document may hold, tokens one request may hold).
MODELS = {
    "voyage-3-large": (32_000, 120_000),
    "voyage-3.5": (32_000, 320_000),
    "voyage-3.5-lite": (32_000, 1_000_000),
    "voyage-code-3": (32_000, 120_000),
    "voyage-context-3": (32_000, 120_000),
}
CONTEXT_MODELS = frozenset({"voyage-context-3"})
MAX_CONTEXT_CHUNKS = 16_000  # chunks in one contextualized request, over all its documents


class VoyageEmbedder(HttpEmbedder):
    """Vectors from the Voyage API: ``document`` inputs for what is stored, ``query`` for searches.

    With a contextualized model (voyage-context-3) every text goes through
    /contextualizedembeddings: ``embed_documents`` sends each text as a one-chunk document, and
    ``embed_contextualized`` embeds each document's chunks in the context of the whole document.
    """

    provider = "voyage"
    display = "Voyage"
    key_variable = "VOYAGE_API_KEY"
    dimensions_variable = "VOYAGE_DIMENSIONS"
    default_base_url = DEFAULT_BASE_URL
    max_batch_size = 1000
    token_ratio = 1.2
    special_tokens = 2

    def __init__(
        self,
        api_key: str | None,
        model: str = "voyage-3-large",
        dimensions: int = 1024,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 128,
        max_tokens: int | None = None,
        batch_tokens: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimensions not in OUTPUT_DIMENSIONS:
            raise ConfigurationError(
                f"VOYAGE_DIMENSIONS={dimensions} is not an output dimension of {model}; "
                f"use one of {', '.join(map(str, OUTPUT_DIMENSIONS))}")
        model_tokens, request_tokens = MODELS.get(model, MODELS["voyage-3-large"])
        super().__init__(
            api_key=api_key, model=model, dimensions=dimensions,
            max_tokens=model_tokens if max_tokens is None else max_tokens, base_url=base_url,
            timeout=timeout, max_retries=max_retries, batch_size=batch_size,
            batch_tokens=request_tokens if batch_tokens is None else batch_tokens, sleep=sleep,
        )
        self.contextual = model in CONTEXT_MODELS

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if self.contextual:
            return [vectors[0] for vectors in self._contextualized([[text] for text in texts], "document")]
        return self._batched(texts, lambda batch: self._embed(batch, "document"))

    def embed_query(self, text: str) -> Vector:
        if self.contextual:
            return self._contextualized([[text]], "query")[0][0]
        return self._embed([text], "query")[0]

    def embed_contextualized(self, documents: Sequence[Sequence[str]]) -> list[list[Vector]]:
        """One vector per chunk, each document's chunks embedded together (in order, no overlap).

        With a model that has no context (voyage-3-large...) the chunks are embedded one by one, so
        callers may use this whatever the model; ``self.contextual`` tells which they got.
        """
        documents = [list(chunks) for chunks in documents]
        if self.contextual:
            return self._contextualized(documents, "document")
        flat = self.embed_documents([chunk for chunks in documents for chunk in chunks])
        out, start = [], 0
        for chunks in documents:
            out.append(flat[start:start + len(chunks)])
            start += len(chunks)
        return out

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "contextualized": self.contextual}

    def _embed(self, batch: list[str], input_type: str) -> list[Vector]:
        body = {"input": batch, "model": self.profile.model, "input_type": input_type,
                "output_dimension": self.profile.dimensions, "truncation": True}
        return self._vectors(self._post("embeddings", body).get("data"), len(batch))

    def _contextualized(self, documents: list[list[str]], input_type: str) -> list[list[Vector]]:
        # A document longer than the model reads in one context goes as consecutive windows.
        windows: list[tuple[int, list[str], int]] = []  # (document number, chunks, tokens)
        for number, chunks in enumerate(documents):
            if chunks:
                windows += [(number, part, tokens) for part, tokens in self._windows(chunks, MAX_CONTEXT_CHUNKS)]
        out: list[list[Vector]] = [[] for _ in documents]
        requests = plan_batches([w[2] for w in windows], self._batch_size, self._batch_tokens,
                                sizes=[len(w[1]) for w in windows], max_size=MAX_CONTEXT_CHUNKS)
        for run in requests:
            group = windows[run.start:run.stop]
            body = {"inputs": [chunks for _, chunks, _ in group], "model": self.profile.model,
                    "input_type": input_type, "output_dimension": self.profile.dimensions}
            results = self._vectors_per_document(self._post("contextualizedembeddings", body).get("data"), group)
            for (number, _, _), vectors in zip(group, results, strict=True):
                out[number].extend(vectors)
        return out

    def _vectors_per_document(self, data: object, group: list[tuple[int, list[str], int]]) -> list[list[Vector]]:
        """``data`` holds one entry per document (by ``index``), each with its chunks' ``data``."""
        entries = self._indexed(data, len(group), noun="results", of="documents")
        return [self._vectors(entry.get("data"), len(chunks)) for entry, (_, chunks, _) in zip(entries, group)]
