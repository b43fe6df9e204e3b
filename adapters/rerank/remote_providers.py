"""The rerank APIs MEMTROVE_RERANKER names: Cohere, Jina, Voyage, and the OpenAI-style ``/rerank`` of local servers.

Each says what it POSTs and where its answer keeps the scores; adapters/rerank/remote.py does the rest.
"""

from __future__ import annotations

from typing import Any

from adapters.rerank.remote import HttpTextReranker


class CohereTextReranker(HttpTextReranker):
    """Cohere's ``POST /v2/rerank``: ``{model, query, documents, top_n}`` -> ``{results: [{index, relevance_score}]}``."""

    provider = "cohere"
    display = "Cohere"
    default_base_url = "https://api.cohere.com/v2"
    default_model = "rerank-v3.5"

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}

    def results(self, payload: Any) -> Any:
        return payload.get("results") if isinstance(payload, dict) else None


class JinaTextReranker(HttpTextReranker):
    """Jina's ``POST /v1/rerank``: ``{model, query, documents, top_n, return_documents}`` -> ``{results: [...]}``."""

    provider = "jina"
    display = "Jina"
    default_base_url = "https://api.jina.ai/v1"
    default_model = "jina-reranker-v2-base-multilingual"

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": documents, "top_n": len(documents),
                "return_documents": False}

    def results(self, payload: Any) -> Any:
        return payload.get("results") if isinstance(payload, dict) else None


class VoyageTextReranker(HttpTextReranker):
    """Voyage's ``POST /v1/rerank``: ``{model, query, documents, top_k, truncation}`` -> ``{data: [...]}``."""

    provider = "voyage"
    display = "Voyage"
    default_base_url = "https://api.voyageai.com/v1"
    default_model = "rerank-2.5"

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        return {"model": self.model, "query": query, "documents": documents, "top_k": len(documents),
                "return_documents": False, "truncation": True}

    def results(self, payload: Any) -> Any:
        return payload.get("data") if isinstance(payload, dict) else None


class OpenAICompatibleTextReranker(HttpTextReranker):
    """``POST <MEMTROVE_RERANKER_URL>/rerank`` as local servers serve it.

    vLLM and llama.cpp (``/v1/rerank``, also Infinity and LiteLLM) take ``{model, query, documents, top_n}`` and
    answer ``{results: [{index, relevance_score}]}``; text-embeddings-inference (``/rerank``) takes
    ``{query, texts, truncate}`` and answers ``[{index, score}]``. The body carries both spellings (each server
    ignores the fields it does not know) and either answer is read. ``model`` is sent only when set (such a
    server serves the model it loaded); the key, when one is set, goes as a bearer token.
    """

    provider = "openai-compatible"
    display = "OpenAI-compatible"
    max_document_chars = 2_000  # local cross-encoders often read 512 tokens; TEI is also asked to truncate

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, "documents": documents, "top_n": len(documents),
                                "return_documents": False, "texts": documents, "truncate": True}
        if self.model:
            body["model"] = self.model
        return body

    def results(self, payload: Any) -> Any:
        if isinstance(payload, list):  # text-embeddings-inference
            return [{"index": item.get("index"), "relevance_score": item.get("score")} if isinstance(item, dict)
                    else item for item in payload]
        return payload.get("results") if isinstance(payload, dict) else None


RERANKERS: dict[str, type[HttpTextReranker]] = {
    cls.provider: cls for cls in (CohereTextReranker, JinaTextReranker, VoyageTextReranker,
                                  OpenAICompatibleTextReranker)}
