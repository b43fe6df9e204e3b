"""OpenAI(-compatible) embeddings through the official client, with our own bounded retries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import httpx  # noqa: F401 - before any thread: openai reads sys.modules["httpx"] without importing it
import openai
from loguru import logger

from domain.errors import ConfigurationError, EmbeddingError, ValidationError
from domain.model import EmbeddingProfile, Vector
from domain.ports import Embedder

PROVIDERS = ("openai", "openai-compatible")
MAX_BATCH_SIZE = 100
DEFAULT_BASE_URL = "https://api.openai.com/v1"
INVALID_KEY = "OpenAI API key is invalid or missing. Check OPENAI_API_KEY environment variable."
MISSING_KEY = "OPENAI_API_KEY not configured"
# Self-hosted servers (Ollama, vLLM, TEI) ignore the key, but the client insists on one.
PLACEHOLDER_KEY = "not-needed"

T = TypeVar("T")


class OpenAIEmbedder(Embedder):
    """Embeds texts with the OpenAI embeddings API or a server that speaks it (via ``base_url``)."""

    def __init__(
        self,
        api_key: str | None,
        model: str = "text-embedding-3-large",
        dimensions: int = 3072,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 100,
        provider: str = "openai",
        max_tokens: int = 8191,
        sleep: Callable[[float], None] = time.sleep,
        send_dimensions: bool = True,
    ) -> None:
        if provider not in PROVIDERS:
            raise ConfigurationError(f"Unknown embedding provider {provider!r}; expected one of {PROVIDERS}")
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ConfigurationError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, got {batch_size}")
        if max_retries < 1:
            raise ConfigurationError(f"max_retries counts attempts and must be at least 1, got {max_retries}")
        if dimensions < 1 or max_tokens < 1 or timeout <= 0:
            raise ConfigurationError("dimensions, max_tokens and timeout must be positive")
        self.profile = EmbeddingProfile(provider, model, dimensions, max_tokens)
        self._api_key = api_key or None
        self._base_url = base_url
        self._timeout = timeout
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._sleep = sleep
        self._send_dimensions = send_dimensions
        self._client: openai.OpenAI | None = None  # built on first use: constructing never touches the network

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        texts = list(texts)
        vectors: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self._batch_size]))
        return vectors

    def embed_query(self, text: str) -> Vector:
        return self._embed_batch([text])[0]

    def count_tokens(self, text: str) -> int:
        from adapters.text.tokenizers import cl100k_count  # lazy: loading the ranks takes a moment

        # The embeddings endpoint adds no special tokens and reads special-token text as plain text.
        return cl100k_count(text)

    def token_ceiling(self, text: str) -> int:
        # A cl100k token holds one byte at least, and the endpoint adds no special tokens. (A lone
        # surrogate, which JSON may carry, is 3 bytes here and 3 as the U+FFFD the tokenizer reads.)
        return len(text.encode("utf-8", "surrogatepass"))

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self.profile.provider,
            "model": self.profile.model,
            "dimensions": self.profile.dimensions,
            "base_url": self._base_url,
            "api_key_configured": self._api_key is not None,
            "max_tokens": self.profile.max_tokens,
        }

    def _client_or_fail(self) -> openai.OpenAI:
        if self._client is None:
            if self._api_key is None and self.profile.provider == "openai":
                raise ConfigurationError(MISSING_KEY)
            self._client = openai.OpenAI(
                api_key=self._api_key or PLACEHOLDER_KEY,
                base_url=self._base_url,
                timeout=self._timeout,
                max_retries=0,  # retries are ours: bounded, logged, with the spec's messages
            )
        return self._client

    def _embed_batch(self, batch: list[str]) -> list[Vector]:
        client = self._client_or_fail()
        params: dict[str, Any] = {"model": self.profile.model, "input": batch, "encoding_format": "float"}
        if self._send_dimensions:
            params["dimensions"] = self.profile.dimensions
        # The raw body, parsed by json: the SDK's models would build an object per float (a fifth of
        # an ingest's CPU at 256 dimensions). Status errors are raised all the same.
        response = self._with_retries(lambda: client.embeddings.with_raw_response.create(**params))
        try:
            body = json.loads(response.http_response.content)
        except ValueError as exc:
            raise EmbeddingError("OpenAI API returned an unusable response (not JSON)") from exc
        return self._vectors(body, len(batch))

    def _with_retries(self, call: Callable[[], T]) -> T:
        failure = ""
        for attempt in range(1, self._max_retries + 1):
            try:
                return call()
            except openai.AuthenticationError as exc:
                raise ConfigurationError(INVALID_KEY) from exc
            except openai.BadRequestError as exc:
                raise ValidationError("content", f"Invalid text for embedding: {_details(exc)}") from exc
            except openai.APITimeoutError:  # before APIConnectionError, its base class
                failure = "timeout"
            except openai.APIConnectionError:
                failure = "connection"
            except openai.RateLimitError:
                failure = "rate_limit"
            except openai.APIStatusError as exc:
                if exc.status_code < 500:  # other 4xx: retrying would get the same answer
                    raise EmbeddingError(
                        f"OpenAI API request failed with status {exc.status_code}: {_details(exc)}"
                    ) from exc
                failure = "unavailable"
            except openai.OpenAIError as exc:  # e.g. a malformed response body
                raise EmbeddingError(f"OpenAI API returned an unusable response ({type(exc).__name__})") from exc
            if attempt < self._max_retries:
                backoff = 2 ** (attempt - 1)
                logger.warning(
                    "embedding_retry attempt={attempt} backoff_ms={backoff_ms} reason={reason}",
                    attempt=attempt,
                    backoff_ms=backoff * 1000,
                    reason=failure,
                    provider=self.profile.provider,
                    model=self.profile.model,
                )
                self._sleep(backoff)
        raise EmbeddingError(self._exhausted(failure))

    def _exhausted(self, failure: str) -> str:
        attempts = self._max_retries
        if failure == "rate_limit":
            return f"Failed after {attempts} attempts due to rate limiting. Try again later."
        if failure == "unavailable":
            return f"OpenAI service unavailable after {attempts} attempts."
        if failure == "timeout":
            return f"Request failed after {attempts} timeouts."
        return f"Cannot connect to OpenAI API at {self._base_url or DEFAULT_BASE_URL}"

    def _vectors(self, body: Any, expected: int) -> list[Vector]:
        listed = body.get("data") if isinstance(body, dict) else None
        data = [item for item in listed or [] if isinstance(item, dict)]
        data.sort(key=lambda item: item["index"] if isinstance(item.get("index"), int) else -1)
        if [item.get("index") for item in data] != list(range(expected)):
            raise EmbeddingError(f"Embedding response held {len(data)} vectors for {expected} texts")
        vectors: list[Vector] = []
        for item in data:
            vector = item.get("embedding")
            if not isinstance(vector, list) or len(vector) != self.profile.dimensions:
                actual = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise EmbeddingError(
                    f"Model {self.profile.model} returned {actual} dimensions; "
                    f"expected {self.profile.dimensions}. Check the configured dimensions."
                )
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
                raise EmbeddingError("OpenAI API returned an embedding that is not a list of numbers")
            vectors.append([float(x) for x in vector])
        return vectors


def _details(exc: openai.APIStatusError) -> str:
    """The server's own error message, without the client's 'Error code: ...' wrapping."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message
