"""The Embedder contract, run against VoyageEmbedder and JinaEmbedder talking to real local fakes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from adapters.embedders.jina import JinaEmbedder
from adapters.embedders.voyage import VoyageEmbedder
from domain.ports import Embedder
from tests.contract.embedder_contract import EmbedderContract
from tests.support.fake_embedding_apis import FakeJinaServer, FakeVoyageServer

KEY = "contract-key"


@pytest.fixture
def fake_voyage() -> Iterator[FakeVoyageServer]:
    with FakeVoyageServer(api_key=KEY) as server:
        yield server


@pytest.fixture
def fake_jina() -> Iterator[FakeJinaServer]:
    with FakeJinaServer(api_key=KEY) as server:
        yield server


class TestVoyageEmbedderContract(EmbedderContract):
    """VoyageEmbedder (voyage-3-large) honours the Embedder contract."""

    @pytest.fixture
    def make_embedder(self, fake_voyage: FakeVoyageServer) -> Callable[[], Embedder]:
        return lambda: VoyageEmbedder(api_key=KEY, dimensions=256, base_url=fake_voyage.base_url,
                                      timeout=5.0, sleep=lambda _: None)


class TestVoyageContextEmbedderContract(EmbedderContract):
    """VoyageEmbedder on voyage-context-3 (each text a one-chunk document) honours it too."""

    @pytest.fixture
    def make_embedder(self, fake_voyage: FakeVoyageServer) -> Callable[[], Embedder]:
        return lambda: VoyageEmbedder(api_key=KEY, model="voyage-context-3", dimensions=256,
                                      base_url=fake_voyage.base_url, timeout=5.0, sleep=lambda _: None)


class TestJinaEmbedderContract(EmbedderContract):
    """JinaEmbedder (late chunking off: with it on, a text's vector depends on its batch) honours it."""

    @pytest.fixture
    def make_embedder(self, fake_jina: FakeJinaServer) -> Callable[[], Embedder]:
        return lambda: JinaEmbedder(api_key=KEY, dimensions=64, base_url=fake_jina.base_url,
                                    timeout=5.0, sleep=lambda _: None)
