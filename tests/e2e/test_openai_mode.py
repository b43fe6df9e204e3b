"""MEMTROVE_EMBEDDER=openai and openai-compatible, end to end, against a real local OpenAI-speaking server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAIServer
from tests.support.mcp_procs import blocking, stdio_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fake() -> FakeOpenAIServer:
    with FakeOpenAIServer(default_dimensions=64, api_key="sk-test") as server:
        yield server


def test_openai_profile_store_search_and_health(fake: FakeOpenAIServer, tmp_path: Path) -> None:
    env = {"MEMTROVE_EMBEDDER": "openai", "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.base_url,
           "OPENAI_EMBED_MODEL": "text-embedding-3-small", "OPENAI_EMBED_DIMS": "64"}
    with blocking(stdio_session(tmp_path, env)) as client:
        stored = client.call("memory_store", {"content": "Prefers window seats", "type": "preference",
                                              "confidence": 0.8})
        assert not stored.is_error, stored.content
        assert stored.structured_content["embedding_provider"] == "openai"
        assert stored.structured_content["embedding_dimensions"] == 64
        found = client.call("memory_search", {"query": "Prefers window seats"})
        assert found.structured_content["results"][0]["id"] == stored.structured_content["id"]
        health = client.call("embedding_health").structured_content
        assert health["provider"] == "openai" and health["api_status"] == "healthy"
        assert health["api_key_configured"] is True and "sk-test" not in str(health)
    bodies = [r.body for r in fake.embedding_requests]
    assert all(b["model"] == "text-embedding-3-small" and b["dimensions"] == 64 for b in bodies)
    assert {r.headers["authorization"] for r in fake.embedding_requests} == {"Bearer sk-test"}


def test_a_wrong_key_is_reported_with_the_spec_message(fake: FakeOpenAIServer, tmp_path: Path) -> None:
    env = {"MEMTROVE_EMBEDDER": "openai", "OPENAI_API_KEY": "sk-wrong", "OPENAI_BASE_URL": fake.base_url,
           "OPENAI_EMBED_DIMS": "64"}
    with blocking(stdio_session(tmp_path, env)) as client:
        result = client.call("memory_store", {"content": "x", "type": "fact", "confidence": 0.5})
        assert result.is_error
        assert result.content[0].text == ("OpenAI API key is invalid or missing. "
                                          "Check OPENAI_API_KEY environment variable.")
        assert client.call("memory_list").structured_content["count"] == 0
        health = client.call("embedding_health").structured_content
        assert health["api_status"] == "unhealthy" and "OPENAI_API_KEY" in health["error"]


def test_openai_compatible_server_without_dimensions(tmp_path: Path) -> None:
    with FakeOpenAIServer(default_dimensions=32) as server:
        env = {"MEMTROVE_EMBEDDER": "openai-compatible", "OPENAI_BASE_URL": server.base_url,
               "OPENAI_EMBED_MODEL": "nomic-embed-text", "OPENAI_EMBED_DIMS": "32"}
        with blocking(stdio_session(tmp_path, env)) as client:
            stored = client.call("memory_store", {"content": "ollama works", "type": "fact", "confidence": 0.5})
            assert not stored.is_error, stored.content
            assert stored.structured_content["embedding_provider"] == "openai-compatible"
        assert all("dimensions" not in r.body for r in server.embedding_requests)
