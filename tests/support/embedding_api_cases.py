"""The Voyage and Jina embedder tests' cases: each adapter with its fake server and its names.

A test module's fixture yields ``from serve(name)``, parametrized over PROVIDERS to run a test
once per provider.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from adapters.embedders.http_api import HttpEmbedder
from adapters.embedders.jina import JinaEmbedder
from adapters.embedders.voyage import VoyageEmbedder
from tests.support.fake_embedding_apis import FakeEmbeddingApi, FakeJinaServer, FakeVoyageServer, kind_vector

KEY = "sk-embed-secret-123"


@dataclass
class ApiCase:
    """One provider under test: how to build its embedder and what its requests are called."""

    name: str
    display: str
    key_variable: str
    server: FakeEmbeddingApi
    factory: Callable[..., HttpEmbedder]
    dims: int
    input_field: str
    kind_field: str
    dimensions_field: str
    document_kind: str
    query_kind: str
    sleeps: list[float] = field(default_factory=list)

    def make(self, **overrides: Any) -> Any:
        options: dict[str, Any] = dict(api_key=KEY, dimensions=self.dims, base_url=self.server.base_url,
                                       timeout=2.0, sleep=self.sleeps.append)
        options.update(overrides)
        return self.factory(**options)

    def expected(self, text: str, kind: str) -> list[float]:
        return kind_vector(text, kind, self.dims)


def _voyage(server: FakeEmbeddingApi) -> ApiCase:
    return ApiCase("voyage", "Voyage", "VOYAGE_API_KEY", server, VoyageEmbedder, 256,
                   "input", "input_type", "output_dimension", "document", "query")


def _jina(server: FakeEmbeddingApi) -> ApiCase:
    return ApiCase("jina", "Jina", "JINA_API_KEY", server, JinaEmbedder, 48,
                   "input", "task", "dimensions", "retrieval.passage", "retrieval.query")


CASES = {"voyage": (FakeVoyageServer, _voyage), "jina": (FakeJinaServer, _jina)}
PROVIDERS = sorted(CASES)


def serve(name: str) -> Iterator[ApiCase]:
    """The provider's case with its fake server running, for a fixture to ``yield from``."""
    server_type, build = CASES[name]
    with server_type(api_key=KEY, slow_seconds=2.0) as server:
        yield build(server)
