"""The opt-in rerank model's settings (issue 43.4): MEMTROVE_RERANKER and its URL, model, key and timeout."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings

RERANKERS = ("off", "cohere", "jina", "voyage", "openai-compatible")
# A hosted API's key may also come from the variable its own tools read (and the Voyage and Jina embedders do).
PROVIDER_KEYS = {"cohere": "COHERE_API_KEY", "jina": "JINA_API_KEY", "voyage": "VOYAGE_API_KEY"}


class RerankerSettings(BaseSettings):
    """Mixed into config.settings.Settings; names are the environment variables, case-insensitive."""

    # off: the learned stage orders a search's best candidates; a provider: its rerank model does, and when it
    # fails (timeout, refused key, rate limit, a broken answer) the learned stage does, with a warning.
    memtrove_reranker: Literal["off", "cohere", "jina", "voyage", "openai-compatible"] = "off"
    # The API's base URL (its rerank endpoint is <URL>/rerank): the provider's own by default; required for
    # openai-compatible, e.g. http://127.0.0.1:8000/v1 (vLLM, llama.cpp) or http://127.0.0.1:8080 (TEI).
    memtrove_reranker_url: str | None = None
    memtrove_reranker_model: str | None = Field(None, max_length=200)  # unset: the provider's default
    memtrove_reranker_api_key: SecretStr | None = None  # unset: COHERE_API_KEY, JINA_API_KEY or VOYAGE_API_KEY
    memtrove_reranker_timeout: float = Field(5.0, gt=0, le=60)  # seconds a search waits for the rerank model
    cohere_api_key: SecretStr | None = None

    @field_validator("memtrove_reranker", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("memtrove_reranker_url", "memtrove_reranker_model", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("memtrove_reranker_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1")
        return value.strip().rstrip("/")

    @model_validator(mode="after")
    def _reranker_complete(self) -> RerankerSettings:
        kind = self.memtrove_reranker
        if kind in PROVIDER_KEYS and self.reranker_api_key is None:
            raise ValueError(f"MEMTROVE_RERANKER={kind} needs an API key: set MEMTROVE_RERANKER_API_KEY "
                             f"or {PROVIDER_KEYS[kind]}")
        if kind == "openai-compatible" and self.memtrove_reranker_url is None:
            raise ValueError("MEMTROVE_RERANKER=openai-compatible needs MEMTROVE_RERANKER_URL, the server's "
                             "base URL (its endpoint is <URL>/rerank), e.g. http://127.0.0.1:8000/v1")
        return self

    @property
    def reranker_api_key(self) -> str | None:
        """MEMTROVE_RERANKER_API_KEY, else the provider's own variable (an OpenAI-compatible server: only the
        former; another provider's key is never sent to it)."""
        given = self.memtrove_reranker_api_key
        if given is None and self.memtrove_reranker in PROVIDER_KEYS:
            given = getattr(self, PROVIDER_KEYS[self.memtrove_reranker].lower(), None)
        value = given.get_secret_value().strip() if given is not None else ""
        return value or None


def text_reranker(settings: RerankerSettings) -> object | None:
    """The rerank model MEMTROVE_RERANKER names (None: off); built without touching the network."""
    if settings.memtrove_reranker == "off":
        return None
    from adapters.rerank.remote_providers import RERANKERS

    return RERANKERS[settings.memtrove_reranker](
        api_key=settings.reranker_api_key, model=settings.memtrove_reranker_model,
        base_url=settings.memtrove_reranker_url, timeout=settings.memtrove_reranker_timeout)
