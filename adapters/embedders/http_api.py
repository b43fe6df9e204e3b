"""What the Voyage and Jina embedders share: a JSON POST with bounded retries, batching, answer checks."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from loguru import logger

from adapters.http_detail import api_detail

from domain.errors import ConfigurationError, EmbeddingError, ValidationError
from domain.model import EmbeddingProfile, Vector
from domain.ports import Embedder


def plan_batches(costs: Sequence[int], max_items: int, max_tokens: int,
                 sizes: Sequence[int] | None = None, max_size: int | None = None) -> list[range]:
    """Consecutive runs of items within ``max_items`` items and ``max_tokens`` summed costs (and,
    given ``sizes``, ``max_size`` summed sizes); an item over a budget on its own goes alone."""
    batches: list[range] = []
    start, tokens, size = 0, 0, 0
    for i, cost in enumerate(costs):
        extra = sizes[i] if sizes is not None else 0
        if i > start and (i - start >= max_items or tokens + cost > max_tokens
                          or (max_size is not None and size + extra > max_size)):
            batches.append(range(start, i))
            start, tokens, size = i, 0, 0
        tokens += cost
        size += extra
    if start < len(costs):
        batches.append(range(start, len(costs)))
    return batches


class HttpEmbedder(Embedder):
    """An embedder behind a provider's HTTP API; subclasses name the provider and build the requests.

    Constructing never touches the network (nor asks for the key): the client is built on first use.
    ``max_retries`` counts attempts, as in the OpenAI adapter; 429, 408 and 5xx answers, timeouts and
    lost connections are retried after 1, 2, 4... seconds; other answers are final.
    """

    provider = ""  # the profile's provider name
    display = ""  # how messages name the provider
    key_variable = ""  # the setting that holds the API key
    dimensions_variable = ""
    default_base_url = ""
    max_batch_size = 1  # the most texts the API takes in one request
    # Our count of the model's tokens is an estimate from cl100k (its own tokenizer is not shipped):
    # cl100k tokens times this ratio, rounded up, plus the special tokens the model adds.
    token_ratio = 1.0
    special_tokens = 0

    def __init__(self, *, api_key: str | None, model: str, dimensions: int, max_tokens: int,
                 base_url: str | None, timeout: float, max_retries: int, batch_size: int,
                 batch_tokens: int, sleep: Callable[[float], None]) -> None:
        if not 1 <= batch_size <= self.max_batch_size:
            raise ConfigurationError(f"batch_size must be between 1 and {self.max_batch_size}, got {batch_size}")
        if max_retries < 1:
            raise ConfigurationError(f"max_retries counts attempts and must be at least 1, got {max_retries}")
        if not model or dimensions < 1 or max_tokens < 1 or batch_tokens < 1 or timeout <= 0:
            raise ConfigurationError("model must be named; dimensions, max_tokens, batch_tokens and timeout "
                                     "must be positive")
        self.profile = EmbeddingProfile(self.provider, model, dimensions, max_tokens)
        self._api_key = api_key or None
        self._base_url = (base_url or self.default_base_url).rstrip("/")
        self._timeout = timeout
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._sleep = sleep
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    # -- the port ---------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        from adapters.text.tokenizers import cl100k_count  # lazy: loading the ranks takes a moment

        ordinary = cl100k_count(text)
        return math.ceil(ordinary * self.token_ratio) + self.special_tokens

    def token_ceiling(self, text: str) -> int:  # the count, with a byte for each cl100k token
        return math.ceil(len(text.encode("utf-8", "surrogatepass")) * self.token_ratio) + self.special_tokens

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.profile.provider, "model": self.profile.model,
            "dimensions": self.profile.dimensions, "base_url": self._base_url,
            "api_key_configured": self._api_key is not None, "max_tokens": self.profile.max_tokens,
            "token_count": "estimate",
        }

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- for subclasses ---------------------------------------------------------------------------
    def _batched(self, texts: Sequence[str], send: Callable[[list[str]], list[Vector]]) -> list[Vector]:
        """``send`` called on runs of texts within the batch size and the request's token budget."""
        texts = list(texts)
        costs = [self.count_tokens(text) for text in texts]
        vectors: list[Vector] = []
        for run in plan_batches(costs, self._batch_size, self._batch_tokens):
            vectors.extend(send(texts[run.start:run.stop]))
        return vectors

    def _windows(self, chunks: list[str], max_chunks: int) -> list[tuple[list[str], int]]:
        """A document's chunks, with their token estimate, in consecutive runs the model reads in one
        context: one run when they fit (the usual case), more when the document is too long."""
        costs = [self.count_tokens(chunk) for chunk in chunks]
        runs = plan_batches(costs, max_chunks, self.profile.max_tokens)
        if len(runs) > 1:
            logger.warning(
                "embedding_context_split chunks={chunks} windows={windows} reason={reason}",
                chunks=len(chunks), windows=len(runs), reason="document longer than one context",
                provider=self.provider, model=self.profile.model,
            )
        return [(chunks[run.start:run.stop], sum(costs[run.start:run.stop])) for run in runs]

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The API's JSON answer to ``body``, after retrying what retrying can fix."""
        client = self._client_or_fail()
        url = f"{self._base_url}/{path}"
        failure, last = "", ""
        for attempt in range(1, self._max_retries + 1):
            try:
                response = client.post(url, json=body)
            except httpx.TimeoutException:  # before TransportError, its base class
                failure = "timeout"
            except httpx.TransportError:
                failure = "connection"
            else:
                status = response.status_code
                if status < 300:
                    return self._json(response)
                if status != 408 and status != 429 and status < 500:
                    self._refuse(response)
                failure = "rate_limit" if status == 429 else "unavailable"
                last = f"HTTP {status}: {self._detail(response)}"
            if attempt < self._max_retries:
                backoff = 2 ** (attempt - 1)
                logger.warning(
                    "embedding_retry attempt={attempt} backoff_ms={backoff_ms} reason={reason}",
                    attempt=attempt, backoff_ms=backoff * 1000, reason=failure,
                    provider=self.provider, model=self.profile.model,
                )
                self._sleep(backoff)
        raise EmbeddingError(self._exhausted(failure, last))

    def _indexed(self, data: Any, expected: int, noun: str = "embeddings", of: str = "texts") -> list[dict[str, Any]]:
        """The entries of an answer's ``data`` list in index order: exactly one per input, or an error."""
        if not isinstance(data, list) or not all(
                isinstance(item, dict) and isinstance(item.get("index"), int) for item in data):
            raise EmbeddingError(f"{self.display} API returned an unusable response (no indexed {noun})")
        items = sorted(data, key=lambda item: item["index"])
        if [item["index"] for item in items] != list(range(expected)):
            raise EmbeddingError(f"{self.display} API returned {len(items)} {noun} for {expected} {of}")
        return items

    def _vectors(self, data: Any, expected: int) -> list[Vector]:
        """The ``data`` list of an answer as vectors in index order, checked for count and size."""
        items = self._indexed(data, expected)
        vectors: list[Vector] = []
        for item in items:
            vector = item.get("embedding")
            if not isinstance(vector, list) or len(vector) != self.profile.dimensions:
                actual = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise EmbeddingError(
                    f"Model {self.profile.model} returned {actual} dimensions; "
                    f"expected {self.profile.dimensions}. Check {self.dimensions_variable}."
                )
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
                raise EmbeddingError(f"{self.display} API returned an embedding that is not a list of numbers")
            vectors.append([float(x) for x in vector])
        return vectors

    # -- internals --------------------------------------------------------------------------------
    def _client_or_fail(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                if self._api_key is None:
                    raise ConfigurationError(
                        f"{self.key_variable} not configured: the {self.display} embedder needs an API key")
                self._client = httpx.Client(
                    timeout=self._timeout,
                    headers={"Authorization": f"Bearer {self._api_key}", "Accept": "application/json"},
                )
            return self._client

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            payload = response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self.display} API returned an unusable response "
                                 f"(status {response.status_code}, not JSON)") from exc
        if not isinstance(payload, dict):
            raise EmbeddingError(f"{self.display} API returned an unusable response (not a JSON object)")
        return payload

    def _refuse(self, response: httpx.Response) -> None:
        status, detail = response.status_code, self._detail(response)
        if status in (401, 403):
            raise ConfigurationError(
                f"{self.display} API refused the API key (HTTP {status}: {detail}). Check {self.key_variable}.")
        if status == 400:
            raise ValidationError("content", f"Invalid text for embedding: {self.display} API said: {detail}")
        raise EmbeddingError(f"{self.display} API request failed with status {status}: {detail}")

    def _detail(self, response: httpx.Response) -> str:
        """The API's own explanation ({"detail": ...} for Voyage and Jina), without the key."""
        text = api_detail(response)[:300] or response.reason_phrase or "no detail"
        return text.replace(self._api_key, "***") if self._api_key else text

    def _exhausted(self, failure: str, last: str) -> str:
        attempts, name = self._max_retries, self.display
        if failure == "rate_limit":
            return f"{name} API: failed after {attempts} attempts due to rate limiting ({last}). Try again later."
        if failure == "unavailable":
            return f"{name} service unavailable after {attempts} attempts ({last})."
        if failure == "timeout":
            return f"{name} API request failed after {attempts} timeouts of {self._timeout:g}s each."
        return f"Cannot connect to {name} API at {self._base_url} (after {attempts} attempts)"
