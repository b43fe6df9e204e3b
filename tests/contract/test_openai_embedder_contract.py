"""The Embedder contract, run against OpenAIEmbedder talking to a real local fake of the API."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from adapters.embedders.openai import OpenAIEmbedder
from tests.contract.embedder_contract import EmbedderContract
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


class TestOpenAIEmbedderContract(EmbedderContract):
    """OpenAIEmbedder honours the Embedder contract."""

    @pytest.fixture
    def make_embedder(self, fake_openai: FakeOpenAIServer) -> Callable[[], OpenAIEmbedder]:
        return lambda: OpenAIEmbedder(
            api_key="sk-contract", model="text-embedding-3-small", dimensions=32,
            base_url=fake_openai.base_url, timeout=5.0, sleep=lambda _: None,
        )
