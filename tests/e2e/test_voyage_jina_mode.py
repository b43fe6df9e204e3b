"""memtrove serve on Voyage and on Jina (MEMTROVE_EMBEDDER=voyage|jina), each against a local HTTP server
that speaks its API: store, search, the profile in results and in embedding_health."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.scenario import call_ok
from tests.support.fake_embedding_apis import FakeJinaServer, FakeVoyageServer
from tests.support.mcp_procs import BlockingClient, blocking, stdio_session

pytestmark = pytest.mark.slow
KEY = "sk-e2e-provider-key"
PROVIDERS = {"voyage": (FakeVoyageServer, "VOYAGE", "voyage-3-large", 512),
             "jina": (FakeJinaServer, "JINA", "jina-embeddings-v3", 256)}


@pytest.fixture(scope="module", params=sorted(PROVIDERS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    name = request.param
    server_type, prefix, model, dims = PROVIDERS[name]
    with server_type(api_key=KEY) as api:
        env = {"MEMTROVE_EMBEDDER": name, f"{prefix}_API_KEY": KEY, f"{prefix}_BASE_URL": api.base_url,
               f"{prefix}_DIMENSIONS": str(dims), "MEMTROVE_TOOLSETS": "core,zapomni"}
        with blocking(stdio_session(tmp_path_factory.mktemp(name) / "data", env)) as client:
            yield name, model, dims, api, client


def test_store_and_search_through_the_provider(served: tuple) -> None:
    name, model, dims, api, client = served
    client: BlockingClient
    health = client.run(call_ok, "embedding_health")
    assert (health["provider"], health["model"], health["dimensions"]) == (name, model, dims), health
    stored = client.run(call_ok, "memory_store", {"content": "The deploy key rotates every ninety days",
                                                  "type": "fact", "confidence": 0.9})
    assert (stored["embedding_provider"], stored["embedding_dimensions"]) == (name, dims)
    added = client.run(call_ok, "add_memory", {"text": "Kubernetes upgrades happen on the first Tuesday"})
    found = client.run(call_ok, "memory_search", {"query": "deploy key rotation"})
    assert found["results"] and found["results"][0]["id"] == stored["id"]
    hits = client.run(call_ok, "search_memory", {"query": "kubernetes upgrades tuesday"})
    assert hits["results"][0]["memory_id"] == added["memory_id"]
    kinds = {r.body.get("input_type") or r.body.get("task") for r in api.requests}
    assert kinds >= ({"document", "query"} if name == "voyage" else {"retrieval.passage", "retrieval.query"})
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in api.requests)
